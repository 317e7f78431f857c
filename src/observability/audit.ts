/**
 * The audit log: one JSON line per tools/call, whatever became of it. It records who asked what and
 * how it ended; never result rows, never personal data, never a token.
 */
import { closeSync, fstatSync, openSync, writeSync } from 'node:fs';
import { ConfigError } from '../lib/errors.js';
import { scopeOf, type DataScope } from '../lib/data-scope.js';
import type { Caller } from '../lib/caller.js';

/** `cancelled`: the client cancelled the call or went away before its answer. */
export type AuditOutcome = 'ok' | 'rejected' | 'failed' | 'refused' | 'cancelled' | 'unknown_tool';

export interface AuditEntry {
  readonly request_id: string;
  /** Token name, or the engine's own id (`stdio:…`, `http`, `cli`): never the token itself. */
  readonly caller: string;
  /** The caller's data scope, when it sees only part of the data. */
  readonly data_scope?: DataScope;
  /** Who the caller is (hashed when the configuration says so), when its credentials tell. */
  readonly subject?: string;
  /** The OAuth client the caller used, when it used one. */
  readonly client_id?: string;
  readonly tool: string;
  /** The validated arguments; null when they did not validate. */
  readonly arguments: Record<string, unknown> | null;
  readonly outcome: AuditOutcome;
  /** argument | infrastructure | protocol, when the call did not succeed. */
  readonly error_class?: 'argument' | 'infrastructure' | 'protocol';
  readonly error_code?: string;
  /** Names of the fields that broke a rule, for rejected calls. */
  readonly invalid_fields?: readonly string[];
  readonly row_count?: number;
  readonly duration_ms: number;
  /** The W3C trace context the client sent with the request, to find the call in a trace. */
  readonly traceparent?: string;
}

/** A refused authentication over HTTP: why, and from where; never any token material. */
export interface AuthFailureAuditEntry {
  readonly reason: string;
  readonly status: number;
  /** The source address, as the server throttles it. */
  readonly source: string;
}

/** What the audit line says of a caller besides its id: its data scope, subject and client, where it has them. */
export function callerFields(caller: Caller): Pick<AuditEntry, 'data_scope' | 'subject' | 'client_id'> {
  const scope = scopeOf(caller);
  return {
    ...(scope ? { data_scope: scope } : {}),
    ...(caller.subject === undefined ? {} : { subject: caller.subject }),
    ...(caller.clientId === undefined ? {} : { client_id: caller.clientId }),
  };
}

export interface AuditLog {
  write(entry: AuditEntry): void;
  /** Absent where there is no HTTP edge to refuse anyone (the report CLI). */
  writeAuthFailure?(entry: AuthFailureAuditEntry): void;
  close(): void;
}

/** Appends to a file created with mode 0600, or writes to stderr when no file is given. */
export function createAuditLog(path: string | undefined, now: () => Date = () => new Date()): AuditLog {
  let fd: number | undefined;
  if (path !== undefined) {
    try {
      fd = openSync(path, 'a', 0o600);
    } catch (err) {
      throw new ConfigError(`QUERYGATE_AUDIT_LOG: cannot open ${path}: ${(err as Error).message}`);
    }
    if ((fstatSync(fd).mode & 0o077) !== 0) {
      throw new ConfigError(`QUERYGATE_AUDIT_LOG: ${path} is readable by others; chmod 600 it`);
    }
  }
  const line = (type: string, entry: object): string =>
    `${JSON.stringify({ time: now().toISOString(), type, ...entry })}\n`;
  // One write per line on an O_APPEND descriptor: lines from concurrent calls never interleave.
  const out = (text: string): void => {
    if (fd === undefined) process.stderr.write(text);
    else writeSync(fd, text);
  };
  return {
    write: (entry) => out(line('audit', entry)),
    writeAuthFailure: (entry) => out(line('auth_failure', entry)),
    close: () => {
      if (fd !== undefined) closeSync(fd);
    },
  };
}
