"""Prompt-injection scanning of memory text: the rules are data, the scanner applies them."""

from sidecar.safety.remembered import scan_remembered
from sidecar.safety.rules import RULES
from sidecar.safety.scanner import Finding, scan

__all__ = ["RULES", "Finding", "scan", "scan_remembered"]
