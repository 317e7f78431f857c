/**
 * The configuration file named by QUERYGATE_CONFIG (JSON, or YAML when its name ends .yaml or .yml):
 * which packs and templates are served, named toolsets, per-template limits, and the settings that
 * override the environment's. Read at start-up, where a bad file stops the server, and again on every
 * reload, where a bad file is refused and the one in force stays. Every error names the field's path
 * and the rule it breaks.
 */
import { readFileSync, statSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { isTimeZone } from '../config.js';
import { ConfigError } from '../lib/errors.js';
import { MAX_ROWS } from '../lib/arguments.js';
import type { TemplateLimits } from '../registry/types.js';
import { oauthSchema, oauthSettingsOf, type OAuthSettings } from './oauth.js';
export {
  SCHEDULE_FORMATS,
  type Destination,
  type ScheduledRun,
  type ScheduleFormat,
  type ScheduleSettings,
  type SmtpSettings,
} from './schedules.js';
export type { ReportSettings } from './reports.js';
import { reportSettingsOf, reportsSchema, type ReportSettings } from './reports.js';
import { schedulesOf, schedulesSchema, type ScheduleSettings, type SmtpSettings } from './schedules.js';

export {
  ASYMMETRIC_ALGORITHMS,
  type AuthorizationServerSettings,
  type DataScopeClaim,
  type OAuthSettings,
} from './oauth.js';

/** A pack to serve, by the name it is known by or the path it is loaded from, with some of its templates. */
export type PackEntry = ({ readonly name: string } | { readonly path: string }) & {
  /** The templates to serve; all of the pack's when absent. */
  readonly templates?: readonly string[];
};

/** The file, checked against its schema. */
export interface ConfigFile {
  /** The packs to serve; every available pack, whole, when absent. */
  readonly packs: readonly PackEntry[] | undefined;
  /** Toolsets by name: a bearer token may give `"toolset": NAME` instead of listing its tools. */
  readonly toolsets: Readonly<Record<string, readonly string[]>>;
  readonly limits: Readonly<Record<string, TemplateLimits>>;
  /** Overrides QUERYGATE_TIME_ZONE. */
  readonly timeZone: string | undefined;
  /** Overrides QUERYGATE_TOKEN_KEY; the file must then be readable by its owner only. */
  readonly tokenKey: string | undefined;
  /** Groups of fewer distinct people than this are left out of grouped results. */
  /** Overrides each pack's own threshold when set. */
  readonly smallGroupThreshold: number | undefined;
  /**
   * What each OAuth scope grants, by scope name: toolsets, or "*" for every served tool. A token's
   * tools are the union over its scopes. Static tokens may name scopes too.
   */
  readonly scopes: Readonly<Record<string, readonly string[]>>;
  /** The OAuth resource server's settings; without them only static tokens authenticate. Read at start-up. */
  readonly oauth: OAuthSettings | undefined;
  /** Settings of the reports `querygate report` runs, by report name. */
  readonly reports: Readonly<Record<string, ReportSettings>>;
  /** Reports the server runs by itself, on a cron schedule, to their destinations (docs/reports.md). */
  readonly schedules: readonly ScheduleSettings[];
  /** The mail server schedules send email through. */
  readonly smtp: SmtpSettings | undefined;
  /** How long editions are kept in the history; for ever when undefined. */
  readonly historyKeepMs: number | undefined;
}

/** A pack the server could serve: its name, where it was loaded from (for `path` entries), its templates. */
export interface AvailablePack {
  readonly pack: string;
  /** The pack's own threshold of protected counts (small_group_threshold), if it sets one. */
  readonly smallGroupThreshold?: number;
  /** The `path` of the config entry it was loaded for, as written there. */
  readonly path?: string;
  readonly templates: readonly { readonly name: string }[];
  /** Reports built from the templates, each with the names of the templates it runs. */
  readonly reports?: readonly { readonly name: string; readonly uses: readonly { readonly name: string }[] }[];
}

/** The file resolved against the packs at hand: what is served. */
export interface ResolvedConfig extends ConfigFile {
  /** The templates served, by pack, in the pack's order. */
  readonly selection: ReadonlyMap<string, readonly string[]>;
  /** Every served tool's name. */
  readonly tools: readonly string[];
}

export interface ConfigFileOptions {
  /** The server's QUERYGATE_STATEMENT_TIMEOUT_MS, which no template's timeout may exceed. */
  readonly statementTimeoutMs: number;
}

const WHERE = 'QUERYGATE_CONFIG';
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MIN_TOKEN_KEY_LENGTH = 16;
/** RFC 6749's scope-token characters. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/;

function schema(options: ConfigFileOptions) {
  const wholeNumber = { error: 'must be a whole number' };
  const nameList = z.array(z.string({ error: 'must be a tool name' }), { error: 'must be a list' });
  const pack = z
    .strictObject({
      name: z.string({ error: 'must be a string' }).optional(),
      path: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
      templates: nameList.min(1, 'must list at least one template; leave it out to serve them all').optional(),
    })
    .superRefine((entry, ctx) => {
      if ((entry.name === undefined) === (entry.path === undefined)) {
        ctx.addIssue({ code: 'custom', message: 'give either "name" or "path"' });
      }
    });
  const limits = z.strictObject({
    max_rows: z
      .int(wholeNumber)
      .min(1, 'must be at least 1')
      .max(MAX_ROWS, `must be at most ${MAX_ROWS}, the row cap of every tool`)
      .optional(),
    timeout_ms: z
      .int(wholeNumber)
      .min(1, 'must be at least 1')
      .max(
        options.statementTimeoutMs,
        `must be at most ${options.statementTimeoutMs}, the server's QUERYGATE_STATEMENT_TIMEOUT_MS`,
      )
      .optional(),
  });
  return z.strictObject(
    {
      packs: z.array(pack, { error: 'must be a list' }).min(1, 'must list at least one pack').optional(),
      toolsets: z
        .record(
          z.string().regex(NAME, 'a toolset name is 1 to 64 letters, digits, _ . or -'),
          nameList.min(1, 'must list at least one tool'),
          {
            error: (issue) =>
              issue.code === 'invalid_type' ? 'must be a mapping of toolset names to lists of tools' : undefined,
          },
        )
        .default({}),
      limits: z
        .record(z.string(), limits, {
          error: (issue) => (issue.code === 'invalid_type' ? 'must be a mapping of tool names to limits' : undefined),
        })
        .default({}),
      time_zone: z.string({ error: 'must be a string' }).refine(isTimeZone, 'is not an IANA time zone').optional(),
      token_key: z
        .string({ error: 'must be a string' })
        .min(MIN_TOKEN_KEY_LENGTH, `must be at least ${MIN_TOKEN_KEY_LENGTH} characters`)
        .optional(),
      small_group_threshold: z.int(wholeNumber).min(2, 'must be at least 2').optional(),
      scopes: z
        .record(
          z.string().regex(SCOPE, 'a scope is 1 to 128 printable characters without spaces, quotes or backslashes'),
          z
            .array(z.string({ error: 'must be a toolset name or "*"' }), { error: 'must be a list' })
            .min(1, 'must grant at least one toolset, or "*"'),
          {
            error: (issue) =>
              issue.code === 'invalid_type' ? 'must be a mapping of scopes to lists of toolsets' : undefined,
          },
        )
        .default({}),
      oauth: oauthSchema(wholeNumber, NAME).optional(),
      reports: reportsSchema(),
      ...schedulesSchema(),
    },
    { error: 'must be a mapping' },
  );
}

/** `packs[0].templates[1]`, `limits.query_sales.max_rows`: where a field is, as the file spells it. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function refuse(problems: readonly string[]): ConfigError {
  return new ConfigError(problems.map((p) => `${WHERE} ${p}`).join('\n'));
}

/** Checks parsed text against the schema; throws a ConfigError naming every field that breaks a rule. */
export function parseConfigFile(value: unknown, options: ConfigFileOptions): ConfigFile {
  const parsed = schema(options).safeParse(value ?? {});
  if (!parsed.success) {
    throw refuse(
      parsed.error.issues.map((issue) => {
        const at = fieldPath(issue.path) || '(the file)';
        if (issue.code === 'unrecognized_keys') {
          const keys = issue.keys.map((k) => JSON.stringify(k)).join(', ');
          return `${at}: ${issue.keys.length > 1 ? 'unknown keys' : 'unknown key'} ${keys}`;
        }
        // A record's bad key: the key's own rule says what is wrong with it.
        if (issue.code === 'invalid_key') return `${at}: ${issue.issues[0]?.message ?? issue.message}`;
        return `${at}: ${issue.message}`;
      }),
    );
  }
  const file = parsed.data;
  return {
    packs: file.packs?.map(({ name, path, templates }) => ({
      ...(name === undefined ? { path: path! } : { name }),
      ...(templates === undefined ? {} : { templates }),
    })),
    toolsets: file.toolsets,
    limits: Object.fromEntries(
      Object.entries(file.limits).map(([tool, { max_rows, timeout_ms }]) => [
        tool,
        {
          ...(max_rows === undefined ? {} : { maxRows: max_rows }),
          ...(timeout_ms === undefined ? {} : { timeoutMs: timeout_ms }),
        },
      ]),
    ),
    timeZone: file.time_zone,
    tokenKey: file.token_key,
    smallGroupThreshold: file.small_group_threshold,
    scopes: file.scopes,
    oauth: file.oauth && oauthSettingsOf(file.oauth),
    reports: reportSettingsOf(file.reports),
    ...schedulesOf(file),
  };
}

/**
 * Reads and checks the file. One that holds `token_key` holds a secret, and is refused when anyone but
 * its owner may read it, as the tokens file and the audit log are.
 */
export function readConfigFile(path: string, options: ConfigFileOptions): ConfigFile {
  const where = `${WHERE} (${path})`;
  let text: string;
  let mode: number;
  try {
    mode = statSync(path).mode;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${where}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = /\.ya?ml$/i.test(path) ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${where}: not valid ${/\.ya?ml$/i.test(path) ? 'YAML' : 'JSON'}: ${(err as Error).message}`);
  }
  const file = parseConfigFile(value, options);
  if (file.tokenKey !== undefined && (mode & 0o077) !== 0) {
    throw new ConfigError(
      `${where}: holds token_key and is readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`,
    );
  }
  return file;
}

/**
 * The file resolved against the packs at hand: which templates are served, and whether every pack,
 * template and tool it names is one. Throws a ConfigError naming each field that names something unknown.
 */
export function resolveConfigFile(file: ConfigFile, available: readonly AvailablePack[]): ResolvedConfig {
  const problems: string[] = [];
  const selection = new Map<string, readonly string[]>();
  const entries: readonly PackEntry[] = file.packs ?? available.map((p) => ({ name: p.pack }));
  entries.forEach((entry, i) => {
    const pack =
      'name' in entry ? available.find((p) => p.pack === entry.name) : available.find((p) => p.path === entry.path);
    if (!pack) {
      problems.push(
        'name' in entry
          ? `packs[${i}].name: "${entry.name}" is not a pack; the packs are ${available.map((p) => p.pack).join(', ')}`
          : `packs[${i}].path: no pack was loaded from "${entry.path}"`,
      );
      return;
    }
    if (selection.has(pack.pack)) {
      problems.push(`packs[${i}]: pack "${pack.pack}" is listed twice`);
      return;
    }
    const reports = pack.reports ?? [];
    const names = [...pack.templates.map((t) => t.name), ...reports.map((r) => r.name)];
    const wanted = entry.templates ?? names;
    wanted.forEach((name, j) => {
      if (!names.includes(name)) {
        problems.push(
          `packs[${i}].templates[${j}]: "${name}" is not a template of pack "${pack.pack}" (its templates: ${names.join(', ')})`,
        );
      }
      const report = reports.find((r) => r.name === name);
      const lacking = report?.uses.map((t) => t.name).filter((used) => !names.includes(used)) ?? [];
      const missing = report?.uses.map((t) => t.name).filter((used) => !wanted.includes(used)) ?? [];
      if (lacking.length > 0) {
        problems.push(`pack "${pack.pack}": report "${name}" runs ${lacking.join(', ')}, not templates of the pack`);
      } else if (missing.length > 0) {
        problems.push(
          `packs[${i}].templates[${j}]: report "${name}" runs ${missing.join(', ')}, which must be listed too`,
        );
      }
    });
    // In the pack's own order, so that a client's cached list and a model's prompt stay stable.
    selection.set(
      pack.pack,
      names.filter((name) => wanted.includes(name)),
    );
  });
  const tools = [...selection.values()].flat();
  const served = (name: string): boolean => tools.includes(name);
  for (const [toolset, members] of Object.entries(file.toolsets)) {
    members.forEach((name, j) => {
      if (!served(name)) problems.push(`${fieldPath(['toolsets', toolset, j])}: "${name}" is not a served tool`);
    });
  }
  const toolsets = Object.keys(file.toolsets);
  for (const [scope, granted] of Object.entries(file.scopes)) {
    granted.forEach((toolset, j) => {
      if (toolset !== '*' && !toolsets.includes(toolset)) {
        problems.push(
          `${fieldPath(['scopes', scope, j])}: "${toolset}" is not a toolset (${toolsets.length === 0 ? 'none are configured' : `the toolsets: ${toolsets.join(', ')}`}), nor "*"`,
        );
      }
    });
  }
  for (const tool of Object.keys(file.limits)) {
    if (!served(tool)) problems.push(`${fieldPath(['limits', tool])}: "${tool}" is not a served tool`);
  }
  const reports = available.flatMap((p) => (p.reports ?? []).map((r) => r.name)).filter(served);
  for (const report of Object.keys(file.reports)) {
    if (!reports.includes(report)) {
      problems.push(
        `${fieldPath(['reports', report])}: "${report}" is not a served report (${reports.length === 0 ? 'none is served' : `the reports: ${reports.join(', ')}`})`,
      );
    }
  }
  file.schedules.forEach((schedule) => {
    if (!reports.includes(schedule.report)) {
      problems.push(
        `${fieldPath(['schedules', schedule.name, 'report'])}: "${schedule.report}" is not a served report (${reports.length === 0 ? 'none is served' : `the reports: ${reports.join(', ')}`})`,
      );
    }
    const mails = schedule.runs.some((run) => run.destinations.some((d) => d.kind === 'email'));
    if (mails && file.smtp === undefined) {
      problems.push(
        `${fieldPath(['schedules', schedule.name])}: sends email, so the file needs an "smtp" section ({ url_env, from })`,
      );
    }
  });
  if (problems.length > 0) throw refuse(problems);
  return { ...file, selection, tools };
}
