"""Compatibility path: `graph.resume` is now `graph.persistence.resume`;
scripts that import the old path keep working."""

from graph.persistence.resume import aresume_config, resume_config

__all__ = ["aresume_config", "resume_config"]
