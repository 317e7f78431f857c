#!/usr/bin/env node
/**
 * Writes contract/tools.json, the committed public contract of every pack the tests cover
 * (test/support/packs.ts): each tool's name, input schema and output schema as tools/list gives them.
 * Run it (`npm run contract:update`, which builds first) when a change to a tool's contract is meant;
 * test/contract-snapshot.test.ts fails until it is. Building the registry needs no database.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import prettier from 'prettier';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { ALL_PACKS } = await import(join(root, 'dist/test/support/packs.js'));
const { publicContract } = await import(join(root, 'dist/src/public-contract.js'));

const file = join(root, 'contract/tools.json');
const text = await prettier.format(JSON.stringify(publicContract(ALL_PACKS)), {
  ...(await prettier.resolveConfig(file)),
  filepath: file,
});
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, text);
const contract = JSON.parse(text);
console.log(
  `wrote contract/tools.json: ${Object.entries(contract)
    .map(([pack, tools]) => `${pack} (${tools.map((t) => t.name).join(', ')})`)
    .join('; ')}`,
);
