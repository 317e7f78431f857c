/**
 * What a declaration's description must be: words a model can choose by, not a placeholder a pack
 * author meant to come back to. A description of 'TBD' was once served through a whole green suite.
 */

/** Texts that stand in for a description ('TBD', 'TODO: …', '...'), compared without case or trailing punctuation. */
const PLACEHOLDERS = new Set([
  'tbd',
  'tba',
  'todo',
  'fixme',
  'xxx',
  'wip',
  'n/a',
  'na',
  'none',
  'description',
  'placeholder',
  'fill in',
  'fill me in',
  'changeme',
  'change me',
  'lorem ipsum',
]);

/** Starts that mark the rest as a note to the author: "TODO: describe", "TBD - ask finance". */
const NOTE_TO_SELF = /^(todo|tbd|tba|fixme|xxx)\b/i;

/**
 * Why a description is not one, or undefined when it is: missing or empty, a placeholder, or fewer
 * than two words. `whatToWrite` is the fix, in the caller's words ("what the figure counts").
 */
export function descriptionProblem(text: unknown, whatToWrite: string): string | undefined {
  if (typeof text !== 'string' || text.trim() === '') return `description is missing; write ${whatToWrite}`;
  const bare = text
    .trim()
    .replace(/[\s.!?:;,…-]+$/u, '')
    .toLowerCase();
  if (bare === '' || PLACEHOLDERS.has(bare) || NOTE_TO_SELF.test(text.trim())) {
    return `description ${JSON.stringify(text)} is a placeholder; write ${whatToWrite}`;
  }
  if (bare.split(/\s+/).length < 2) return `description ${JSON.stringify(text)} is one word; write ${whatToWrite}`;
  return undefined;
}
