"""The rule engine: load rules, detect the environment, and find the sites where kernels fit."""

from __future__ import annotations

from adopter.engine.environment import Environment, detect_environment
from adopter.engine.loading import RuleSet, load_rules, workspace_rule_paths
from adopter.engine.sites import EngineResult, check, find

__all__ = [
    "EngineResult",
    "Environment",
    "RuleSet",
    "check",
    "detect_environment",
    "find",
    "load_rules",
    "workspace_rule_paths",
]
