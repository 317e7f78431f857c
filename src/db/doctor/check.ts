/**
 * What a doctor check is and what it is given, below every check and below doctor's list of them, so
 * that each check imports these and nothing imports a check back.
 */
import type pg from 'pg';
import type { PersonalColumn } from '../../pack.js';
import type { DeclarationProbe } from '../../registry/types.js';

export interface SafetyCheck {
  readonly name: string;
  /** False makes the role unsafe: doctor exits 1 and serve refuses it. */
  readonly ok: boolean;
  /**
   * A finding that does not make the role unsafe but is worth knowing (reported as WARN): what the
   * reader could do if its password were used outside the server.
   */
  readonly warning?: boolean;
  /**
   * A failure outside querygate's own database (another database of the cluster): doctor fails it,
   * but serve only reports it, since querygate's connections never go there and a running replica
   * should not stop serving because someone created a database beside it.
   */
  readonly outsideDatabase?: boolean;
  /** What was found, when it is worth saying. */
  readonly detail?: string;
  /** The statement (run as an admin) that fixes a failure or clears a warning. */
  readonly fix?: string;
  /**
   * A failure of a pack's declarations, not of the role (declared-sources.ts): serve refuses it in one
   * line where the role is otherwise safe (--allow-unsafe-role serves anyway, as for the role's own).
   */
  readonly declaration?: boolean;
  /** A declaration's failure because the reader lacks a grant (42501), not because the source is wrong. */
  readonly permission?: boolean;
}

/** What the served packs let the reader read: their schemas, and the personal columns in them. */
export interface ReaderScope {
  readonly schemas: readonly string[];
  /** The declared personal columns ("schema.table.column") whose raw data the reader must not reach. */
  readonly personal: Readonly<Record<string, PersonalColumn>>;
  /**
   * The columns ("schema.table.column") the packs declare as not personal: with `personal`, every
   * column the reader can read in `schemas`; a readable column in neither fails (none when unset).
   */
  readonly notPersonal?: readonly string[];
  /** What the packs' tools ask of the database about their declarations (a tool's `probes`). */
  readonly probes?: readonly DeclarationProbe[];
}

/** The role a check runs as, over one plain connection, with its name and database quoted for the fixes. */
export interface RoleUnderCheck {
  readonly client: pg.Client;
  readonly role: string;
  readonly database: string;
  readonly superuser: boolean;
}

/** The reader under check, with the scope the packs allow it. */
export interface ReaderUnderCheck extends RoleUnderCheck {
  readonly scope: ReaderScope;
  /** doctor's: also read the values of the columns declared not personal; serve judges them by name only. */
  readonly sampleValues: boolean;
}

/** One of the reader's checks, in doctor's list: one finding or several. */
export type ReaderCheck = (reader: ReaderUnderCheck) => Promise<SafetyCheck | readonly SafetyCheck[]>;

/** A check that passes when nothing offends; otherwise it names the offenders and the fix for each. */
export function noneFound(name: string, offenders: readonly string[], fix: (offender: string) => string): SafetyCheck {
  if (offenders.length === 0) return { name, ok: true };
  return { name, ok: false, detail: offenders.join(', '), fix: [...new Set(offenders.map(fix))].join(' ') };
}
