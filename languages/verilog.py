"""Verilog / SystemVerilog: Icarus Verilog 11, the testbench module ``tb`` at the top."""

from languages.record import Record

RECORD = Record(
    name="verilog",
    rank=18,
    tags=("verilog", "systemverilog", "sv", "v"),
    source="main.sv",
    compile=["iverilog", "-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb", "-o", "main.vvp", "main.sv"],
    run=["vvp", "-n", "main.vvp"],
    aliases=("sv", "systemverilog"),
    sandboxfusion=("verilog",),
    shows_compile=True,
    packages=("iverilog",),
    toolchain_doc="Icarus Verilog 11 (`-g2012 -s tb`)",
)
