"""Lua 5.4."""

from languages.assemble import script
from languages.record import Record

RECORD = Record(
    name="lua",
    rank=12,
    tags=("lua",),
    source="main.lua",
    run=["lua5.4", "main.lua"],
    sandboxfusion=("lua",),
    packages=("lua5.4",),
    asserts=script('io.write("\\n" .. "{a}" .. "{b}" .. "\\n")'),
    toolchain_doc="Lua 5.4",
)
