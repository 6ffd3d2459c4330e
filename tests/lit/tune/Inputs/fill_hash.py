#!/usr/bin/env python3
"""Writes a tuning-table template with @HASH@ replaced by the FNV-1a-64 hash of a .tile file (what `tilec
tune` records), so a test can make a table that matches, or on purpose does not match, the file."""
import sys

template, tile = sys.argv[1], sys.argv[2]
h = 0xCBF29CE484222325
for b in open(tile, "rb").read():
    h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
sys.stdout.write(open(template).read().replace("@HASH@", "%016x" % h))
