/**
 * Where a protected count protects little: a pack that protects a count of people (a template's
 * `protectedFigures`) and also serves a row list returning those people's personal fields (masked or
 * tokenized) lets a caller read the people one record at a time. Not a refusal, since the list may be
 * the pack's purpose; said once at start-up, so that the operator can narrow a toolset.
 */
import { personalAt, sourcesOf } from './sources.js';
import type { AnyTemplate } from './types.js';

/** One line per pair of a protecting tool and a listing tool of the same templates, naming both. */
export function protectedButListed(templates: readonly AnyTemplate[]): string[] {
  const protecting = templates.filter((t) => (t.protectedFigures ?? []).length > 0);
  const lines: string[] = [];
  for (const p of protecting) {
    for (const t of templates) {
      if (t === p) continue;
      const personal = Object.entries(t.columns)
        .filter(([, c]) => sourcesOf(c).some((s) => personalAt(t.personal, s) !== undefined))
        .map(([alias]) => alias);
      if (personal.length === 0) continue;
      lines.push(
        `${p.name} protects ${p.protectedFigures!.join(', ')}, but ${t.name} lists the records of people (${personal.join(', ')}): the protected count guards nothing that list shows`,
      );
    }
  }
  return lines;
}
