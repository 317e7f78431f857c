/** A real MCP client linked to a real server over the in-memory transport pair, plus an admin connection. */
import { Client as ModernClient, InMemoryTransport as ModernInMemory } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { inject } from 'vitest';
import { templates } from '../../queries/index.js';
import { reports } from '../../reports/index.js';
import type { AuditEntry, AuditLog } from '../../src/observability/audit.js';
import type { ServerContent } from '../../src/content/index.js';
import { connectReader, type ReaderDatabase } from '../../src/db/connect.js';
import { createCallLimits, createSubscriptionLimits, type LimitsOptions } from '../../src/lib/limits.js';
import { createTokenizer } from '../../src/lib/masking.js';
import { createLogger, type Logger } from '../../src/lib/logger.js';
import { createRegistry, runThrough, type AnyTemplate, type Caller, type Registry } from '../../src/registry/index.js';
import type { AnyReport } from '../../src/reports.js';
import { startJobService, type JobService, type JobSettings } from '../../src/jobs/service.js';
import { openJobStore } from '../../src/jobs/store.js';
import { createServer, type ServerDeps } from '../../src/server.js';

export interface HarnessOptions {
  readonly readerUrl?: string;
  readonly timeZone?: string;
  readonly statementTimeoutMs?: number;
  readonly tokenKey?: string;
  readonly applicationName?: string;
  readonly templates?: readonly AnyTemplate[];
  /** Reports served beside the templates; the sales pack's with its templates, none with a test's own. */
  readonly reports?: readonly AnyReport[];
  /** A registry built by the test (with its own options); otherwise one of `templates`. */
  readonly registry?: Registry;
  readonly caller?: Caller;
  readonly audit?: AuditLog;
  readonly limits?: Partial<LimitsOptions>;
  readonly poolMax?: number;
  readonly isReady?: () => boolean;
  /** The clock periods are resolved by. */
  readonly now?: () => number;
  /** The resources and prompts served (contentOf(packs)); the engine's own when omitted. */
  readonly content?: ServerContent;
  /** The revision the client speaks: 2025-11-25 after initialize (the default), or 2026-07-28. */
  readonly era?: 'legacy' | 'modern';
  /** The extensions the 2026-07-28 client declares with each request (io.modelcontextprotocol/tasks, say). */
  readonly extensions?: Record<string, Record<string, never>>;
  /**
   * Serves the reports that declare `job` as jobs too, on the job store at `jobsUrl` (the shared test
   * database's by default), with these settings over the defaults.
   */
  readonly jobs?: Partial<JobSettings> & { readonly jobsUrl?: string };
}

export interface Harness {
  readonly client: Client;
  /** With era 'modern': the SDK's v2 client, pinned to 2026-07-28 (and `client` is not connected). */
  readonly modern: ModernClient;
  /** Every line the server logged, parsed. */
  readonly logs: Record<string, unknown>[];
  /** Every audit entry written, unless an audit log was given. */
  readonly audits: AuditEntry[];
  readonly reader: ReaderDatabase;
  /** The job service, when the harness serves jobs. */
  readonly jobs: JobService | undefined;
  call(name: string, args: unknown): Promise<CallToolResult>;
  close(): Promise<void>;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger('debug', (line) => logs.push(JSON.parse(line) as Record<string, unknown>));
  const audits: AuditEntry[] = [];
  const poolMax = options.poolMax ?? 4;
  const reader = connectReader(
    options.readerUrl ?? inject('readerUrl'),
    { statementTimeoutMs: options.statementTimeoutMs ?? 5000, poolMax, applicationName: options.applicationName },
    logger,
  );
  const registry =
    options.registry ??
    createRegistry(options.templates ?? templates, {
      reports: options.reports ?? (options.templates ? [] : reports),
      jobs: options.jobs !== undefined,
    });
  const deps: ServerDeps = {
    registry,
    db: reader,
    tokenize: createTokenizer(options.tokenKey ?? 'test-token-key'),
    logger,
    audit: options.audit ?? { write: (entry) => audits.push(entry), close: () => undefined },
    limits: createCallLimits({
      callsPerMinute: 10_000,
      maxConcurrentPerCaller: 100,
      maxActive: poolMax,
      maxQueued: 100,
      maxQueueWaitMs: 10_000,
      ...options.limits,
    }),
    subscriptions: createSubscriptionLimits({ perCaller: 100, total: 1000, maxLifetimeMs: 3_600_000 }),
    ctx: { timeZone: options.timeZone ?? 'UTC' },
    isReady: options.isReady ?? (() => true),
    ...(options.now ? { now: options.now } : {}),
    ...(options.content ? { content: options.content } : {}),
  };
  const jobs = options.jobs && startTestJobs(options.jobs, deps, logger);
  const server = createServer(jobs ? { ...deps, jobs } : deps, options.caller ?? { id: 'test' });
  const client = new Client({ name: 'querygate-tests', version: '1.0.0' });
  const modern = new ModernClient(
    { name: 'querygate-tests', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      ...(options.extensions ? { capabilities: { extensions: options.extensions } } : {}),
    },
  );
  if (options.era === 'modern') {
    const [clientTransport, serverTransport] = ModernInMemory.createLinkedPair();
    await server.connect(serverTransport);
    await modern.connect(clientTransport);
  } else {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await server.connect(serverTransport);
    await client.connect(clientTransport);
    await client.listTools(); // the client caches output schemas and validates structuredContent against them
  }
  return {
    client,
    modern,
    logs,
    audits,
    reader,
    jobs,
    call: async (name, args) =>
      (await (options.era === 'modern' ? modern : client).callTool({
        name,
        arguments: args as Record<string, unknown>,
      })) as CallToolResult,
    close: async () => {
      await (options.era === 'modern' ? modern : client).close();
      await server.close();
      await jobs?.close();
      await reader.close();
    },
  };
}

/** A job service over the test job store, running jobs through the harness's registry. */
function startTestJobs(
  options: Partial<JobSettings> & { readonly jobsUrl?: string },
  deps: ServerDeps,
  logger: Logger,
): JobService {
  const url = options.jobsUrl ?? inject('jobsUrl');
  return startJobService({
    store: openJobStore(url),
    url,
    settings: {
      ttlSeconds: 3600,
      maxPerCaller: 2,
      leaseSeconds: 15,
      maxAttempts: 3,
      maxRunning: 4,
      ...options,
    },
    run: runThrough(deps.registry, deps),
    logger,
  });
}

export async function connectAdmin(): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: inject('adminUrl') });
  await admin.connect();
  return admin;
}

/** The structured result of a successful call; fails the test with the error text otherwise. */
export function structured<T>(result: CallToolResult): T {
  if (result.isError) throw new Error(`tool call failed: ${textOf(result)}`);
  return result.structuredContent as T;
}

/** A result's figures without data_as_of, the one field that differs between two calls on the same data. */
/** An answer without the instants that depend on when it was asked: data_as_of, and the minute a running range is cut at. */
export function figures(content: unknown): unknown {
  const { data_as_of: _asOf, until: _until, ...rest } = content as Record<string, unknown>;
  return rest;
}

export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/** One harness per reporting zone and caller, keyed "<zone> <caller name>", over one reader and clock. */
export async function startHarnessGrid(
  readerUrl: string,
  zones: readonly string[],
  callers: readonly { readonly name: string; readonly caller: NonNullable<HarnessOptions['caller']> }[],
  now: () => number,
): Promise<Map<string, Harness>> {
  const out = new Map<string, Harness>();
  for (const timeZone of zones) {
    for (const { name, caller } of callers) {
      out.set(`${timeZone} ${name}`, await startHarness({ readerUrl, timeZone, caller, now }));
    }
  }
  return out;
}

/** The regions of the scoped caller of the metrics suites. */
export const SCOPE = ['Europe', 'Asia Pacific'];
/** A caller who sees everything and one scoped to SCOPE's regions. */
export const CALLERS = [
  { name: 'unscoped', caller: { id: 'analyst' } },
  { name: 'scoped to Europe and Asia Pacific', caller: { id: 'rep', dataScope: { region: SCOPE } } },
] as const;
