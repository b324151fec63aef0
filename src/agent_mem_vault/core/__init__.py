"""The bottom layer: errors, clock and ids. Imports nothing else of the package."""
