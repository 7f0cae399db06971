#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of the app receipt fuzz target in fuzz/corpus-receipt/: receipt payloads
in Apple's shape (the target signs each input as a receipt's payload) and a few that are not.
Deterministic; rerun after a change."""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-receipt")


def tlv(tag, content):
    length = len(content)
    if length < 0x80:
        return bytes([tag, length]) + content
    digits = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(digits)]) + digits + content


def integer(value):
    return tlv(0x02, value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True))


def attribute(kind, value):
    return tlv(0x30, integer(kind) + integer(1) + tlv(0x04, value))


def utf8(text):
    return tlv(0x0C, text.encode())


def purchase(transaction_id, product="course.1"):
    return attribute(17, tlv(0x31, attribute(1701, integer(1)) + attribute(1702, utf8(product))
                             + attribute(1703, utf8(transaction_id)) + attribute(1704, tlv(0x16, b"2026-12-04T09:00:00Z"))
                             + attribute(1705, utf8(transaction_id))))


receipt = tlv(0x31, attribute(2, utf8("com.example.courses")) + attribute(3, utf8("1"))
              + purchase("2000000100000001") + purchase("2000000100000002", "vip.monthly"))
seeds = {
    "receipt.der": receipt,
    "receipt-xcode.der": tlv(0x04, receipt),
    "receipt-empty.der": tlv(0x31, attribute(2, utf8("com.example.courses"))),
    "receipt-opaque.der": tlv(0x31, attribute(4, b"\x01\x02\x03") + purchase("2000000100000003")),
    "not-a-set.der": tlv(0x30, b""),
    "indefinite.der": bytes([0x31, 0x80, 0x00, 0x00]),
}
os.makedirs(HERE, exist_ok=True)
for name, content in seeds.items():
    with open(os.path.join(HERE, name), "wb") as file:
        file.write(content)
