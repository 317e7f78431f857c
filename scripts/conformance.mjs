/**
 * npm run conformance: MCP's conformance suite against querygate over Streamable HTTP, once per
 * revision querygate speaks, each on its own wire (2025-11-25: the initialize handshake;
 * 2026-07-28: stateless, per-request _meta). A run covers what that revision's requirement set
 * scores; it passes when every failing check is in conformance/expected-failures-<revision>.yaml,
 * and fails when an entry there passes (a stale baseline), so the baseline stays honest.
 */
import { readFile, readdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  ROOT,
  TOOLS,
  buildIfNeeded,
  installTool,
  makeWorkDir,
  node22,
  run,
  startHttpServer,
  step,
} from './mcp-harness.mjs';

const REVISIONS = ['2025-11-25', '2026-07-28'];
/** The scenarios of extensions querygate serves, by name prefix: held to the baseline like scored ones. */
const SERVED_EXTENSIONS = ['tasks-'];

let node, suite, yaml, work, server;
const ready = await step('install the suite, build querygate, start it over HTTP', async () => {
  node = await node22();
  const installed = await installTool(TOOLS.conformance);
  suite = join(installed, 'node_modules', TOOLS.conformance.name);
  // The suite's own YAML parser, to read its requirement sets and our baselines as it does.
  yaml = createRequire(join(installed, 'node_modules/'))('yaml');
  await buildIfNeeded();
  work = await makeWorkDir('querygate-conformance-');
  server = await startHttpServer(join(work, 'data'), join(work, 'server.log'));
});

let passed = ready;
if (ready) {
  try {
    for (const revision of REVISIONS) {
      passed = (await step(`conformance suite, requirements ${revision}`, () => runSuite(revision))) && passed;
    }
  } finally {
    await server.stop();
  }
}
if (!passed && work) {
  console.log('\n== querygate stderr');
  console.log(await readFile(join(work, 'server.log'), 'utf8').catch(() => '(no log)'));
}
if (work) await rm(work, { recursive: true, force: true });
process.exit(passed ? 0 : 1);

async function runSuite(revision) {
  const baseline = join(ROOT, `conformance/expected-failures-${revision}.yaml`);
  const results = join(work, `results-${revision}`);
  const args = ['server', '--url', server.url, '--requirements', revision, '--expected-failures', baseline];
  try {
    await run(node, [join(suite, 'dist/index.js'), ...args, '--output-dir', results]);
  } catch {
    // The runner names what failed but not why; the why is in its per-scenario results.
    await printUnexpectedFailures(revision, results, baseline);
    throw new Error('the suite failed; see its summary and the checks above');
  }
  await checkServedExtensions(results, baseline);
}

/**
 * The extensions querygate serves (tasks) are run by the suite without scoring, so the runner
 * neither fails their checks nor reads their baseline entries. They are held to the same rule here:
 * every check passes but those the baseline lists (each calls a fixture of the suite's), and a listed
 * check that passes is a stale entry.
 */
async function checkServedExtensions(results, baselineFile) {
  const excused = new Set((await readYaml(baselineFile)).server ?? []);
  const problems = [];
  for (const dir of (await readdir(results).catch(() => [])).sort()) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
    if (!SERVED_EXTENSIONS.some((prefix) => scenario.startsWith(prefix))) continue;
    const checks = JSON.parse(await readFile(join(results, dir, 'checks.json'), 'utf8').catch(() => '[]'));
    for (const check of checks) {
      const listed = excused.has(`${scenario}:${check.id}`);
      if ((check.status === 'FAILURE' || check.status === 'WARNING') && !listed) {
        problems.push(`  ${scenario}:${check.id}  ${check.status}  ${(check.errorMessage ?? '').slice(0, 300)}`);
      } else if (check.status === 'SUCCESS' && listed) {
        problems.push(`  ${scenario}:${check.id}  passes: remove it from the baseline`);
      }
    }
  }
  if (problems.length > 0) {
    console.log(`\nChecks of the extensions querygate serves, against the baseline:\n${problems.join('\n')}`);
    throw new Error('an extension scenario failed, or its baseline is stale; see above');
  }
}

/**
 * Prints each check that fails the run, with the reason the suite gives: a scored scenario's check
 * that failed or warned (with a baseline, the runner counts a warning as a failure) and is not in
 * the baseline. Stale baseline entries the runner lists itself.
 */
async function printUnexpectedFailures(revision, results, baselineFile) {
  const scored = new Set(await readYaml(join(suite, `requirements/${revision}.yaml`)).then((r) => r.server));
  const excused = new Set((await readYaml(baselineFile)).server ?? []);
  const dirs = await readdir(results).catch(() => []);
  console.log('\nFailing checks not in the baseline:');
  for (const dir of dirs.sort()) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
    if (!scored.has(scenario)) continue;
    const checks = JSON.parse(await readFile(join(results, dir, 'checks.json'), 'utf8').catch(() => '[]'));
    for (const check of checks) {
      if (check.status !== 'FAILURE' && check.status !== 'WARNING') continue;
      if (excused.has(scenario) || excused.has(`${scenario}:${check.id}`)) continue;
      const why = (check.errorMessage ?? '').replace(/\s+/g, ' ').slice(0, 300);
      console.log(`  ${scenario}:${check.id}  ${check.status}  ${why}`);
    }
  }
}

async function readYaml(file) {
  return yaml.parse(await readFile(file, 'utf8')) ?? {};
}
