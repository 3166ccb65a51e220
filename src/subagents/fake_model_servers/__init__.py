"""Fake model servers the project owns, on 127.0.0.1: real agent binaries run offline on them."""
