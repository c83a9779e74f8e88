"""Tools: manifests (docs/tools.md), their loading, schemas, redaction, and the registry.

manifest.py     the manifest model (pydantic)
files.py        reading a --tools directory (YAML / JSON)
environment.py  ${VAR} expansion
schema.py       JSON Schema compilation and argument problems
redaction.py    masking values by JSON pointer and credential-looking values
registry.py     Tool (a compiled manifest), Registry and its tool-set revision
live.py         LiveRegistry: the serving snapshot, swapped by a --tools reload
"""

from gateway.tools.environment import expand_env
from gateway.tools.manifest import ToolManifest
from gateway.tools.registry import Registry, Tool
from gateway.tools.schema import compile_schema, schema_problems

__all__ = ["Registry", "Tool", "ToolManifest", "compile_schema", "expand_env", "schema_problems"]
