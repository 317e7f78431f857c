/**
 * What a registry is to the code that serves it: the Registry, what one call needs (CallDeps) and
 * what it is told along the way (CallOptions). The transports, the protocol layer and the job runner
 * depend on these types, never on how a registry is built.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AuditLog } from '../observability/audit.js';
import type { Caller } from '../lib/caller.js';
import type { ReaderDatabase } from '../db/connect.js';
import type { JobService, RunEnding } from '../jobs/service.js';
import type { JobRow } from '../jobs/store.js';
import type { Tokenizer } from '../lib/masking.js';
import type { InfraError } from '../lib/errors.js';
import type { CallLimits } from '../lib/limits.js';
import type { Logger } from '../lib/logger.js';
import type { QueryContext } from './types.js';

export interface CallDeps {
  readonly db: ReaderDatabase;
  readonly tokenize: Tokenizer;
  readonly logger: Logger;
  readonly audit: AuditLog;
  readonly limits: CallLimits;
  readonly ctx: QueryContext;
  /** False until the start-up safety check has passed against a reachable database. */
  readonly isReady: () => boolean;
  /** While not ready, why: the database unreachable or refusing the login; database_unavailable when unset. */
  readonly unready?: () => InfraError | undefined;
  /** Aborted when a stopping server gives up waiting: calls still running are cancelled. */
  readonly shutdown?: AbortSignal;
  /** The clock `period` arguments are resolved by (milliseconds since the epoch); Date.now when unset. */
  readonly now?: () => number;
  /** The job store and runner, when one is configured (src/jobs/service.ts). */
  readonly jobs?: JobService;
}

/** The levels of a log message to the client (MCP's, from syslog). */
export type ClientLogLevel = 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency';

export interface CallOptions {
  readonly caller: Caller;
  /** Aborted when the client cancels or goes away; the running query is then cancelled. */
  readonly signal?: AbortSignal;
  /** The request's W3C trace context, written into the call's audit and log lines. */
  readonly traceparent?: string;
  /**
   * Tells the client how the call ended (MCP's notifications/message): the outcome, row count and
   * timing, or the error code. Never arguments, rows or anything personal.
   */
  readonly report?: (level: ClientLogLevel, data: Record<string, unknown>) => void;
  /** Told after each step of a call that takes several (a report's template runs): steps done, of how many. */
  readonly progress?: (done: number, total: number, message: string) => void;
  /** Told how the call ended (its audit outcome and error code): a job's runner records it. */
  readonly ended?: (ending: RunEnding) => void;
}

export interface Registry {
  /** Every tool exactly as `tools/list` returns it, computed once. */
  readonly tools: readonly Tool[];
  /**
   * Each tool's whole input schema, every bound the server checks, by tool name: its listed input
   * schema leaves out the period's names, which the instructions list, and what only a malformed call
   * meets (src/registry/tools.ts, listedInput).
   */
  readonly argumentSchemas: ReadonlyMap<string, Record<string, unknown>>;
  /**
   * Each tool's whole answer schema, every field typed down to the rows' columns, by tool name: its
   * listed output schema is `{"type": "object"}` (src/registry/tools.ts, outline).
   */
  readonly answerSchemas: ReadonlyMap<string, Record<string, unknown>>;
  /**
   * The data-scope dimensions the packs of the served templates declare: a caller's scope may name
   * these only (one scoped on another sees no template).
   */
  readonly dataScopeDimensions: ReadonlySet<string>;
  /**
   * The tools one caller may see: those of its toolset that can apply its data scope. A client of the
   * tasks extension (`tasks`) runs a report in the background as a task, so its list leaves out the
   * job tools, which it may still call.
   */
  toolsFor(caller: Caller, listing?: { readonly tasks?: boolean }): readonly Tool[];
  /**
   * Runs a tool. Bad arguments, refusals and database trouble come back as isError results; an
   * unknown tool, or one the caller may not see, throws the protocol error -32602.
   */
  call(name: string, args: unknown, deps: CallDeps, options: CallOptions): Promise<CallToolResult>;
  /** True for a tool that runs as a job (a report that declares `job`), when jobs are served. */
  runsAsJob(name: string): boolean;
  /**
   * Whether this caller may run the report `name` as a job now (its toolset and data scope allow the
   * report or its submit tool): only then may it read, poll or cancel the report's jobs.
   */
  mayRunAsJob(caller: Caller, name: string): boolean;
  /**
   * Submits a call of a tool that runs as a job, checked as call() checks it (the caller's toolset,
   * the arguments): gives the job, or the call's error result (bad arguments, too many jobs).
   */
  submit(
    name: string,
    args: unknown,
    deps: CallDeps,
    options: CallOptions,
  ): Promise<{ readonly job: JobRow } | { readonly result: CallToolResult }>;
}
