"""Modules the tests import (not tests themselves)."""
