"""Reads of the delivery engine: the delivery log, a subscription's health and the gauges."""
