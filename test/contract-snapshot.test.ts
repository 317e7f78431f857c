/**
 * The committed public contract (contract/tools.json): every tool's name, input schema and output
 * schema, pack by pack. Clients and report scripts depend on it, so a change fails here until it is
 * made on purpose with `npm run contract:update`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contractChanges, publicContract, type PublicContract } from '../src/public-contract.js';
import type { Pack } from '../src/pack.js';
import { listedInput, outline } from '../src/registry/tools.js';
import { ALL_PACKS, readerUrlFor } from './support/packs.js';
import { startHarness } from './support/harness.js';

const FILE = 'contract/tools.json';
const committed = JSON.parse(readFileSync(FILE, 'utf8')) as PublicContract;
/** A pack's live contract; a pack the registry refuses fails its own test with the registry's message. */
const liveOf = (pack: Pack): PublicContract => publicContract([pack]);

const explain = (changes: readonly string[]): string =>
  `The public contract differs from ${FILE}:\n  ${changes.join('\n  ')}\n` +
  `Clients and report scripts depend on it. If the change is meant, run \`npm run contract:update\` and commit ${FILE}; otherwise undo it.`;

describe('the public contract snapshot', () => {
  it.each(ALL_PACKS.map((p) => [p.name, p] as const))('contract: pack %s matches contract/tools.json', (name, pack) => {
    const changes = contractChanges({ [name]: committed[name] ?? [] }, liveOf(pack));
    expect(changes, explain(changes)).toEqual([]);
  });

  it('contract: lists every pack the tests cover, and no other', () => {
    const packs = ALL_PACKS.map((p) => p.name).sort();
    expect(Object.keys(committed).sort(), explain(packs.map((p) => `pack ${p}`))).toEqual(packs);
  });

  it('contract: the snapshot is what tools/list gives a real client, its input schemas listed and its answer schemas outlined', async () => {
    for (const pack of ALL_PACKS) {
      const harness = await startHarness({
        readerUrl: readerUrlFor(pack),
        templates: pack.templates,
        reports: pack.reports ?? [],
        jobs: {},
      });
      try {
        const { tools } = await harness.client.listTools();
        // The listing gives the committed input schema without what listedInput leaves out, and the
        // committed answer schema outlined (src/registry/tools.ts).
        const listed = liveOf(pack)[pack.name]!.map((t) => ({
          ...t,
          inputSchema: listedInput(t.inputSchema),
          outputSchema: outline(t.outputSchema as Record<string, unknown>),
        }));
        expect(tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema, outputSchema: t.outputSchema }))).toEqual(
          listed,
        );
      } finally {
        await harness.close();
      }
    }
  });

  it('contract: a changed tool is named, with the path that changed and how to update on purpose', () => {
    const tool = committed[ALL_PACKS[0]!.name]![0]!;
    const input = tool.inputSchema as { properties: Record<string, unknown> };
    const changed: PublicContract = {
      [ALL_PACKS[0]!.name]: [
        { ...tool, inputSchema: { ...input, properties: { ...input.properties, extra: { type: 'string' } } } },
      ],
    };
    const changes = contractChanges({ [ALL_PACKS[0]!.name]: [tool] }, changed);
    expect(changes).toEqual([
      `${ALL_PACKS[0]!.name}/${tool.name}: inputSchema.properties.extra was (absent), is {"type":"string"}`,
    ]);
    expect(explain(changes)).toMatch(/npm run contract:update/);
    expect(contractChanges({ p: [tool] }, { p: [] })).toEqual([`p/${tool.name}: removed`]);
    expect(contractChanges({}, { p: [tool] })).toEqual([`pack p: new, with tools ${tool.name}`]);
  });
});
