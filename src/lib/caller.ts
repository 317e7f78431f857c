/** The caller of a tool, as every layer that authenticates, limits, audits or scopes a call sees it. */

/** Who is calling: a token's name and toolset, or the stdio session. */
export interface Caller {
  readonly id: string;
  /** The tools this caller may see and call; undefined means all. */
  readonly tools?: ReadonlySet<string>;
  /** Data-scope values by dimension: the caller sees only rows whose dimension value is one of these. Undefined or {}: unscoped. */
  readonly dataScope?: Readonly<Record<string, readonly string[]>>;
  /** Who the caller is, for the audit line only (already hashed when the configuration asks for it). */
  readonly subject?: string;
  /** The OAuth client the caller used, for the audit line only. */
  readonly clientId?: string;
}
