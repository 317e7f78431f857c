#!/usr/bin/env bash
# Prints the path of the pinned mcpb CLI (MCP Bundles), installing it into a cache folder on first use.
# A build tool, not a project dependency: it brings its own zod 3, node-forge and prompts, and only the
# bundle build and its check use it.
set -euo pipefail
version=2.1.2
cache="${QUERYGATE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/querygate-tools}"
dir="$cache/mcpb-$version"
cli="$dir/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"
if [ ! -f "$cli" ]; then
  mkdir -p "$cache"
  # Installed beside the cache entry and moved in whole, so an interrupted install leaves nothing half-made.
  partial=$(mktemp -d "$dir.partial.XXXXXX")
  trap 'rm -rf "$partial"' EXIT
  npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix "$partial" \
    "@anthropic-ai/mcpb@$version" >&2
  mv -T "$partial" "$dir" 2>/dev/null || true # another run may have got there first
fi
echo "$cli"
