/**
 * The README and docs/ stay true to the code: the settings table of docs/configuration.md has one row for every
 * environment variable the sources read and none for a variable nothing reads; every `querygate …` command and
 * `npm run …` script they show is one the CLI or package.json accepts; and the README's curl and CLI examples,
 * extracted from its text, run without error against the built server on the test database. Each check is also run
 * on a sample broken on purpose, so none passes by checking nothing.
 */
import { HISTORY_COMMANDS } from '../src/commands/report-history.js';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli, startCli, type RunningCli } from './support/cli.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** Settings the docs give a row before the code that reads them lands; drop each once it is read. */
const ANNOUNCED: readonly string[] = [];
/** Read by the sources, but the system's, not querygate's settings. */
const NOT_SETTINGS = new Set(['PATH', 'HOME', 'TZ']);
/** Named in the docs as an example value (`client_secret_env`), not a variable querygate itself reads. */
const EXAMPLE_NAMES = new Set(['QUERYGATE_INTROSPECTION_SECRET']);

function filesUnder(dir: string, extensions: readonly string[]): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return name === 'fixtures' ? [] : filesUnder(path, extensions);
    return extensions.some((ext) => name.endsWith(ext)) ? [path] : [];
  });
}

/** The environment variables a source reads: `env.X`, `env['X']`, and the loader's helpers' `(env, 'X'`. */
function envReads(source: string): Set<string> {
  const found = new Set<string>();
  const patterns = [
    /\benv\.([A-Z][A-Z0-9_]*)\b/g,
    /\benv\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\]/g,
    /\(\s*env\s*,\s*['"]([A-Z][A-Z0-9_]*)['"]/g,
    /\$\{?((?:QUERYGATE|TEST)_[A-Z0-9_]+)/g, // shell scripts
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.add(match[1]!);
  for (const name of NOT_SETTINGS) found.delete(name);
  return found;
}

/** The engine's reads (every one a setting), and the test suite's and scripts' own (QUERYGATE_* and TEST_*). */
function variablesRead(): Set<string> {
  const read_ = new Set<string>();
  for (const file of filesUnder('src', ['.ts'])) for (const name of envReads(read(file))) read_.add(name);
  for (const file of [...filesUnder('test', ['.ts']), ...filesUnder('scripts', ['.mjs', '.sh', '.ts'])]) {
    if (file.endsWith('docs.test.ts')) continue;
    for (const name of envReads(read(file))) if (/^(QUERYGATE|TEST)_/.test(name)) read_.add(name);
  }
  return read_;
}

/** The first column of the table under `## Settings`: a variable's name, or `—` for a setting of the file alone. */
function settingsRows(markdown: string): string[] {
  const start = markdown.indexOf('\n## Settings\n');
  if (start < 0) return [];
  const lines = markdown.slice(start).split('\n').slice(2);
  const table = lines.slice(lines.findIndex((line) => line.startsWith('|')));
  const rows = table
    .slice(
      0,
      table.findIndex((line) => !line.startsWith('|')),
    )
    .slice(2);
  return rows.map((row) => row.split('|')[1]!.trim().replace(/^`|`$/g, ''));
}

/** What is wrong with a settings table, given the variables the sources read. */
function settingsViolations(rows: readonly string[], variables: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const named = rows.filter((row) => row !== '—');
  for (const name of variables) {
    const count = named.filter((row) => row === name).length;
    if (count !== 1) problems.push(`${name} is read by the sources and has ${count} rows in the settings table`);
  }
  for (const name of new Set(named)) {
    if (!variables.has(name) && !ANNOUNCED.includes(name)) problems.push(`${name} has a row but nothing reads it`);
  }
  return problems;
}

/** The code of a Markdown text: its fenced blocks and inline code spans, one string each. */
function codeOf(markdown: string): string[] {
  const fences = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  return [...fences, ...[...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!)];
}

interface Accepted {
  readonly commands: ReadonlySet<string>;
  readonly options: ReadonlySet<string>;
  readonly reports: ReadonlySet<string>;
  readonly scripts: ReadonlySet<string>;
}

function accepted(): Accepted {
  const cli = read('src/cli.ts');
  const usage = /const USAGE = `([\s\S]*?)`;/.exec(cli)?.[1] ?? '';
  const commands = new Set([...usage.matchAll(/^ {2}querygate \[?([a-z][a-z-]*)/gm)].map((m) => m[1]!));
  const optionBlock = /options: \{([\s\S]*?)\n {4}\},/.exec(cli)?.[1] ?? '';
  const options = new Set([...optionBlock.matchAll(/^\s+'?([a-z][a-z-]*)'?: \{/gm)].map((m) => `--${m[1]!}`));
  const reportSources = [...filesUnder('reports', ['.ts']), ...filesUnder('examples', ['.ts'])].map(read).join('\n');
  const reports = new Set([...reportSources.matchAll(/\bcommand: '([a-z][a-z-]*)'/g)].map((m) => m[1]!));
  const scripts = new Set(Object.keys((JSON.parse(read('package.json')) as { scripts: object }).scripts));
  return { commands, options, reports, scripts };
}

/** Every `querygate …`, `node dist/src/cli.js …` and `npm run …`/`npm start`/`npm test` in the code of a text. */
function commandViolations(markdown: string, ok: Accepted): string[] {
  const problems: string[] = [];
  for (const code of codeOf(markdown)) {
    const cli =
      /(?:^|[\s(`&;|])(?:npx (?:-y )?querygate|querygate|node (?:--\S+ )*dist\/src\/cli\.js)(?=[ \t\n]|$)([^\n#]*)/gm;
    for (const match of code.matchAll(cli)) {
      const words = match[1]!.trim().split(/\s+/).filter(Boolean);
      const command = words[0];
      // A placeholder (`querygate …`, `<name>`), an option, or a word of a drawing is no command to judge.
      if (command === undefined || !/^\[?[a-z]/.test(command)) continue;
      if (command.endsWith(':')) continue; // a line of the CLI's output, such as `querygate report: …`
      const name = command.replace(/^\[|\]$/g, '').replace(/[;,.)]$/, '');
      if (!ok.commands.has(name) && name !== 'help') {
        problems.push(`"${match[0].trim()}": ${name} is not a command of the CLI`);
        continue;
      }
      if (name === 'report') {
        const report = words[1];
        const history = (HISTORY_COMMANDS as readonly string[]).includes(report ?? '');
        if (report !== undefined && /^[a-z]/.test(report) && !ok.reports.has(report) && !history) {
          problems.push(`"${match[0].trim()}": ${report} is not a report's command`);
        }
        continue; // a report's options are its tool's arguments
      }
      for (const word of words.slice(1)) {
        const option = /^\[?(--[a-z][a-z-]*)/.exec(word)?.[1];
        if (option !== undefined && !ok.options.has(option)) {
          problems.push(`"${match[0].trim()}": ${option} is not an option of the CLI`);
        }
      }
    }
    for (const match of code.matchAll(/\bnpm (?:run ([a-z][\w:.-]*)|(start|test)\b)/g)) {
      const script = (match[1] ?? match[2]!).replace(/[:.]$/, '');
      if (!ok.scripts.has(script)) problems.push(`"${match[0]}": package.json has no script ${script}`);
    }
  }
  return problems;
}

const DOCUMENTS = ['README.md', ...filesUnder('docs', ['.md'])];

/**
 * The rules of a metrics model as docs/your-own-database.md lists them: each bullet's first `phrase`
 * (with … for what a message fills in) and the messages the engine refuses a model with.
 */
function modelRules(docs: string, engine: string): { undocumented: string[]; unknown: string[] } {
  const section = docs.slice(docs.indexOf('### The rules a model follows'), docs.indexOf('## Rollups declared'));
  const phrases = [...section.matchAll(/^- `([^`]+)`/gm)].map((m) => m[1]!.split('…').map((f) => f.trim()));
  const messages = [...engine.matchAll(/new ConfigError\(\s*`([^`]*)`/g)].map((m) => m[1]!);
  // A message that forwards a description's problem (descriptions.ts) is that rule's: its words are there.
  const own = messages.filter((m) => !m.endsWith('${problem}'));
  return {
    undocumented: own.filter((m) => !phrases.some((fragments) => fragments.every((f) => m.includes(f)))),
    unknown: phrases.filter((fragments) => !fragments.every((f) => engine.includes(f))).map((f) => f.join('…')),
  };
}

describe('the rules of a metrics model (docs/your-own-database.md)', () => {
  const engine =
    read('src/metrics/model-checks.ts') + read('src/lib/descriptions.ts') + read('src/db/doctor/declared-sources.ts');
  const docs = read('docs/your-own-database.md');

  it('lists every rule src/metrics/model-checks.ts refuses a model by, and none it does not', () => {
    expect(modelRules(docs, engine)).toEqual({ undocumented: [], unknown: [] });
  });

  it('fails on a rule left out of the list, and on a rule the engine does not have', () => {
    const without = docs.replace(/^- `its bands must be ascending`.*$/m, '');
    expect(modelRules(without, engine).undocumented).toEqual([
      '${where}: amount ${a.name}: its bands must be ascending',
    ]);
    const invented = docs.replace(
      '### The rules a model follows\n',
      '### The rules a model follows\n\n- `must be blue`\n',
    );
    expect(modelRules(invented, engine).unknown).toEqual(['must be blue']);
  });
});

describe('the settings table (docs/configuration.md)', () => {
  const variables = variablesRead();
  const rows = settingsRows(read('docs/configuration.md'));

  it('has one row for every variable the sources read, and none for a variable nothing reads', () => {
    expect(variables).toContain('DATABASE_URL');
    expect(variables).toContain('QUERYGATE_TIME_ZONE');
    expect(variables).toContain('QUERYGATE_STDIO_CALLER'); // read through a helper, callerName(env, '…')
    expect(settingsViolations(rows, variables)).toEqual([]);
  });

  it('fails a table that misses a variable, repeats one or names one nothing reads', () => {
    const missing = rows.filter((row) => row !== 'QUERYGATE_POOL_MAX');
    expect(settingsViolations(missing, variables)).toEqual([
      'QUERYGATE_POOL_MAX is read by the sources and has 0 rows in the settings table',
    ]);
    expect(settingsViolations([...rows, 'QUERYGATE_POOL_MAX'], variables)).toEqual([
      'QUERYGATE_POOL_MAX is read by the sources and has 2 rows in the settings table',
    ]);
    expect(settingsViolations([...rows, 'QUERYGATE_POOL_MIN'], variables)).toEqual([
      'QUERYGATE_POOL_MIN has a row but nothing reads it',
    ]);
  });

  it('finds the reads of the loader, its helpers and shell scripts', () => {
    const source = "env.A_B; env['C']; positiveInt(env, 'D_E', 1); cache=\"${QUERYGATE_F:-x}\"; process.env.PATH";
    expect([...envReads(source)].sort()).toEqual(['A_B', 'C', 'D_E', 'QUERYGATE_F']);
  });

  it('has a row for every QUERYGATE_ variable README.md and docs/ mention', () => {
    const named = new Set(rows);
    const unknown = DOCUMENTS.flatMap((path) =>
      [...read(path).matchAll(/\b(QUERYGATE_[A-Z0-9]+[A-Z0-9_]*[A-Z0-9])\b/g)]
        .map((m) => m[1]!)
        .filter((name) => !named.has(name) && !EXAMPLE_NAMES.has(name))
        .map((name) => `${path}: ${name}`),
    );
    expect([...new Set(unknown)]).toEqual([]);
  });
});

describe('the commands shown in README.md and docs/', () => {
  const ok = accepted();

  it('knows the CLI, its options, the reports and the scripts', () => {
    expect([...ok.commands].sort()).toEqual([
      'check-rollups',
      'doctor',
      'migrate',
      'new-metric',
      'new-pack',
      'new-query',
      'report',
      'seed',
      'serve',
    ]);
    expect(ok.options).toContain('--http');
    expect([...ok.reports].sort()).toEqual(['trend', 'weekly']);
    expect(ok.scripts).toContain('conformance');
  });

  it.each(DOCUMENTS)('%s shows only commands the CLI and package.json accept', (path) => {
    expect(commandViolations(read(path), ok)).toEqual([]);
  });

  it('fails a misspelled command, option, report or script', () => {
    const broken = [
      '```sh\nnpx querygate serv --http\nquerygate serve --htp\nquerygate report weeky --week last\n```',
      'Run `npm run conformanse` or `node dist/src/cli.js migrat`.',
    ].join('\n\n');
    expect(commandViolations(broken, ok)).toEqual([
      '"npx querygate serv --http": serv is not a command of the CLI',
      '"querygate serve --htp": --htp is not an option of the CLI',
      '"querygate report weeky --week last": weeky is not a report\'s command',
      '"npm run conformanse": package.json has no script conformanse',
      '"node dist/src/cli.js migrat": migrat is not a command of the CLI',
    ]);
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Relative links of a document (under `dir`) whose file, or whose heading, does not exist. */
function brokenLinks(markdown: string, dir: string, exists: (path: string) => string | undefined): string[] {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))
    .filter((target) => {
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const text = file === '' ? markdown : exists(join(dir, file));
      if (text === undefined) return true;
      if (anchor === undefined) return false;
      const anchors = [...text.matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!));
      return !anchors.includes(anchor);
    });
}

describe('the links of README.md and docs/', () => {
  const exists = (path: string): string | undefined => {
    try {
      return statSync(join(ROOT, path)).isFile() ? readFileSync(join(ROOT, path), 'utf8') : undefined;
    } catch {
      return undefined;
    }
  };

  it.each(DOCUMENTS)('%s links only to files and headings that exist', (path) => {
    expect(brokenLinks(read(path), join(path, '..'), exists)).toEqual([]);
  });

  it('fails a link to a missing file or heading', () => {
    const sample =
      '# Top\n\nSee [a](docs/security.md#oauth), [b](docs/nowhere.md), [c](docs/security.md#no-such), [d](#top), [e](#gone).';
    expect(brokenLinks(sample, '.', exists)).toEqual(['docs/nowhere.md', 'docs/security.md#no-such', '#gone']);
  });
});

/** The README's shell examples, one command a line (backslash continuations joined), comments kept off. */
function shellExamples(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```/gm)]
    .flatMap((m) => m[1]!.replace(/\\\n\s*/g, ' ').split('\n'))
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
}

/** Splits a shell command into words: plain, 'single-quoted' and "double-quoted" (the README's curl needs no more). */
function shellWords(command: string): string[] {
  const words: string[] = [];
  for (const m of command.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g)) words.push(m[1] ?? m[2] ?? m[3]!);
  return words;
}

const execFileAsync = promisify(execFile);
const hasCurl = await execFileAsync('sh', ['-c', 'command -v curl']).then(
  () => true,
  () => false,
);

/** Runs a curl example against `origin`: with curl when the machine has it, else as the same request by fetch. */
async function runCurl(command: string, origin: string): Promise<string> {
  const aimed = command.replaceAll('http://127.0.0.1:3000', origin);
  if (hasCurl) return (await execFileAsync('sh', ['-c', aimed])).stdout;
  const words = shellWords(aimed).slice(1);
  const headers: Record<string, string> = {};
  let body: string | undefined;
  let url: string | undefined;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === '-s') continue;
    if (word === '-H') {
      const [name, ...value] = words[++i]!.split(':');
      headers[name!.trim()] = value.join(':').trim();
    } else if (word === '-d') body = words[++i];
    else if (!word.startsWith('-')) url = word;
    else throw new Error(`the curl option ${word} is not understood here: teach runCurl or change the example`);
  }
  const response = await fetch(url!, { method: body === undefined ? 'GET' : 'POST', headers, body });
  return response.text();
}

/** What is wrong with an answer to a JSON-RPC request: not JSON-RPC, an error, or an isError tool result. */
function answerProblems(text: string): string[] {
  const data = text.trimStart().startsWith('{')
    ? text
    : text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5))
        .at(-1);
  let answer: { result?: { isError?: boolean; content?: { text?: string }[] }; error?: unknown };
  try {
    answer = JSON.parse(data ?? '') as typeof answer;
  } catch {
    return [`not a JSON-RPC answer: ${text.slice(0, 200)}`];
  }
  if (answer.error !== undefined) return [`a JSON-RPC error: ${JSON.stringify(answer.error)}`];
  if (answer.result === undefined) return ['no result'];
  if (answer.result.isError === true) return [`an isError result: ${answer.result.content?.[0]?.text ?? ''}`];
  return [];
}

describe("the README's examples, run against the test database", () => {
  const readme = read('README.md');
  const examples = shellExamples(readme);
  const curls = examples.filter((line) => line.startsWith('curl '));
  const cliRuns = examples.filter((line) => /^(npx querygate|querygate|node dist\/src\/cli\.js) /.test(line));
  const env = {
    DATABASE_URL: inject('readerUrl'),
    QUERYGATE_JOBS_URL: inject('jobsUrl'),
    QUERYGATE_TOKEN_KEY: 'docs-test-token-key',
  };
  let server: RunningCli;
  let origin: string;

  beforeAll(async () => {
    // `npm start`, as package.json runs it, on a free port.
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
    const args = start.split(/\s+/).slice(start.split(/\s+/).indexOf('dist/src/cli.js') + 1);
    server = startCli([...args, '--port', '0'], env);
    origin = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!).origin;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('shows curl and CLI examples', () => {
    expect(curls.length).toBeGreaterThanOrEqual(2);
    expect(curls.some((line) => line.includes('"period"'))).toBe(true);
    expect(cliRuns.length).toBeGreaterThanOrEqual(1);
  });

  it('answers every curl example without an error', async () => {
    for (const curl of curls) expect(answerProblems(await runCurl(curl, origin)), curl).toEqual([]);
  });

  it('fails a curl example that names no tool or gives an argument the tool refuses', async () => {
    const sample = curls.find((line) => line.includes('tools/call'));
    if (sample === undefined) throw new Error('the README shows no curl example of tools/call');
    const unknownTool = sample.replace(/"name":"[a-z_]+"/, '"name":"query_order_cuont"');
    const badPeriod = sample.replace(/"period":"[a-z_0-9]+"/, '"period":"last_8_days"');
    expect(unknownTool).not.toBe(sample);
    expect(badPeriod).not.toBe(sample);
    expect(answerProblems(await runCurl(unknownTool, origin))).toHaveLength(1);
    expect(answerProblems(await runCurl(badPeriod, origin))[0]).toMatch(/isError|JSON-RPC error/);
  });

  it('lists in its tools table exactly the tools a fresh start serves', async () => {
    const response = await fetch(`${origin}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    const { result } = (await response.json()) as { result: { tools: { name: string }[] } };
    const section = readme.slice(
      readme.indexOf('\n## Tools\n'),
      readme.indexOf('\n## ', readme.indexOf('\n## Tools\n') + 1),
    );
    const listed = [...section.matchAll(/^\| `([a-z_]+)`/gm)].map((m) => m[1]!);
    expect(listed).toEqual(result.tools.map((tool) => tool.name));
  });

  // The MCP Inspector's example needs Node 22 and a download; `npm run inspector` runs that client.
  it.each(cliRuns)('runs `%s` and it exits 0 with output', async (line) => {
    const args = shellWords(line).slice(line.startsWith('npx ') ? 2 : line.startsWith('node ') ? 2 : 1);
    const { code, stdout, stderr } = await runCli(args, env);
    expect(code, stderr).toBe(0);
    expect(stdout.length).toBeGreaterThan(0);
  });

  it('fails a CLI example with an argument the report refuses', async () => {
    const line = cliRuns.find((example) => example.includes(' report '));
    expect(line).toBeDefined();
    const broken = line!.replace(/--week \S+/, '--week last-ish');
    expect(broken).not.toBe(line);
    const { code } = await runCli(shellWords(broken).slice(2), env);
    expect(code).toBe(2);
  });
});
