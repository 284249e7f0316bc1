"""Prompt-injection scanning of memory text: the rules are data, the scanner applies them."""

from sidecar.safety.scanner import RULES, Finding, scan

__all__ = ["RULES", "Finding", "scan"]
