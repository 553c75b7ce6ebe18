"""Lua 5.4. Assert mode runs the tests apart (verifiers/kinds/code/apart_scripts.py)."""

from languages.record import Record

RECORD = Record(
    name="lua",
    rank=12,
    tags=("lua",),
    source="main.lua",
    run=["lua5.4", "main.lua"],
    sandboxfusion=("lua",),
    packages=("lua5.4",),
    toolchain_doc="Lua 5.4",
)
