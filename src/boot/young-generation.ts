/**
 * Imported first by the CLI. V8 starts its young generation at 1 MB a semi-space and doubles it as
 * objects survive, up to a maximum it derives from the machine's memory (16 MB a semi-space on most):
 * a server's start-up checks and its first calls grow it there, and those two semi-spaces and their
 * pages are most of what the process holds above its code and live data. `--max-old-space-size=1024`
 * (as `npm start` and Docker pass it) lowers that maximum; an MCP client launching `querygate serve`
 * passes no flag, and `--max-semi-space-size` set after start is not read again. The growth factor
 * is read each time V8 would grow the young generation, so setting it to 1 here keeps it at its
 * initial size: more frequent, smaller scavenges, each proportional to what survives, not to what
 * was allocated. Measured in BENCHMARKS.md ("Peak RSS as clients launch it"). Only for `serve` over
 * stdio: `seed` and `report` allocate in bulk and are short-lived.
 */
import { setFlagsFromString } from 'node:v8';

// `serve` over stdio: no argument, `serve`, or options only, and no `--http` (the HTTP server keeps
// V8's default, for its throughput at concurrency; `npm start` and Docker bound it with their flag).
const [first, ...rest] = process.argv.slice(2);
if (
  (first === undefined || first === 'serve' || first.startsWith('-')) &&
  first !== '--http' &&
  !rest.includes('--http')
) {
  setFlagsFromString('--semi-space-growth-factor=1');
}
