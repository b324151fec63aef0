"""The index's migrations are cut into statements where SQLite says each ends."""

from __future__ import annotations

import sqlite3

from agent_mem_vault.vault.index.schema import MIGRATIONS, statements

SCRIPT = """
CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE log(what TEXT NOT NULL);
-- a comment; with a semicolon in it
INSERT INTO notes(text) VALUES ('one; two');
CREATE TRIGGER notes_logged AFTER INSERT ON notes BEGIN
    INSERT INTO log VALUES ('added; ' || new.text);
    UPDATE notes SET text = text || ';' WHERE id = new.id;
END;
INSERT INTO notes(text) VALUES ('three')
"""


def test_a_semicolon_in_a_string_or_a_trigger_body_stays_in_its_statement() -> None:
    cut = statements(SCRIPT)
    assert len(cut) == 5
    assert cut[2].endswith("VALUES ('one; two');")
    assert cut[3].startswith("CREATE TRIGGER") and cut[3].endswith("END;")
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("BEGIN")  # as a migration runs: inside the index's own transaction
    for statement in cut:
        conn.execute(statement)
    conn.execute("COMMIT")
    assert [r[0] for r in conn.execute("SELECT text FROM notes ORDER BY id")] == [
        "one; two",
        "three;",
    ]
    assert [r[0] for r in conn.execute("SELECT what FROM log")] == ["added; three"]


def test_a_migration_cut_into_statements_stays_in_one_transaction() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.create_function("amv_text", 1, lambda v: v, deterministic=True)
    conn.execute("BEGIN")
    for _name, sql in MIGRATIONS:
        for statement in statements(sql):
            conn.execute(statement)
            assert conn.in_transaction
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_every_migration_is_cut_where_it_was_written() -> None:
    for _name, sql in MIGRATIONS:
        assert len(statements(sql)) == sql.count(";")
