/** Who this server says it is, in `initialize`, in `server/discover` and in every modern result. */

/** Kept equal to package.json's version; a test checks it. */
export const VERSION = '0.1.0';

export interface Identity {
  readonly info: { readonly name: string; readonly title: string; readonly version: string };
  readonly instructions: string;
}

/** What a server serving these packs says about itself: its subjects in the title, each pack's instructions. */
export function describeServer(packs: readonly { subject: string; instructions: string }[]): Identity {
  const subjects = packs.map((p) => p.subject);
  const listed =
    subjects.length <= 1 ? (subjects[0] ?? 'data') : `${subjects.slice(0, -1).join(', ')} and ${subjects.at(-1)}`;
  return {
    info: { name: 'querygate', title: `querygate: read-only ${listed} queries`, version: VERSION },
    instructions: [
      `querygate answers questions about ${listed} through fixed, read-only query tools; every result is capped, and personal data comes back desensitized.`,
      ...packs.map((p) => p.instructions),
    ].join(' '),
  };
}

/** A server described by no pack: what the engine alone can say. */
export const ENGINE_IDENTITY: Identity = describeServer([]);
