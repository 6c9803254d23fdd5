"""Tests of the inspector page: its HTTP API and the page in a real browser."""
