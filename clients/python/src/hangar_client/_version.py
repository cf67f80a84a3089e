"""The client's version: the API version it was written against and tested with."""

VERSION = "1.1.0"
