// Starts a reference AT Protocol PDS (with an in-memory PLC directory) for the
// publishing tests, on 127.0.0.1 only, and prints one JSON line with its URL
// when it is ready. It stops when stdin closes or on SIGTERM/SIGINT.
//
// The dev-env servers call `listen(port)` with no host, which binds every
// interface; wrapping net.Server#listen keeps them on loopback. Resolving
// "localhost" IPv4-first makes the PDS reach the PLC directory on 127.0.0.1.
'use strict'

const dns = require('node:dns')
const net = require('node:net')

dns.setDefaultResultOrder('ipv4first')
const listen = net.Server.prototype.listen
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') {
    args.splice(1, 0, '127.0.0.1')
  } else if (args[0] && typeof args[0] === 'object' && !args[0].host && !args[0].path) {
    args[0] = { ...args[0], host: '127.0.0.1' }
  }
  return listen.apply(this, args)
}

const { TestNetworkNoAppView } = require('@atproto/dev-env')

async function main () {
  const network = await TestNetworkNoAppView.create({})
  const pdsUrl = `http://127.0.0.1:${network.pds.port}`
  const plcUrl = `http://127.0.0.1:${network.plc.port}`
  process.stdout.write(JSON.stringify({ pdsUrl, plcUrl }) + '\n')
  let closing = false
  const stop = async () => {
    if (closing) return
    closing = true
    await network.close().catch(() => {})
    process.exit(0)
  }
  process.stdin.on('end', stop)
  process.stdin.on('close', stop)
  process.stdin.resume()
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}

main().catch((err) => {
  process.stderr.write(String((err && err.stack) || err) + '\n')
  process.exit(1)
})
