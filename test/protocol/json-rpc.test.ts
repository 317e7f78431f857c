/** The id an over-long stdio line is answered under, read from the line's start alone. */
import { describe, expect, it } from 'vitest';
import { createIdScanner, idFromPrefix } from '../../src/protocol/json-rpc.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('idFromPrefix', () => {
  it('reads a top-level number or string id, wherever it stands among the keys', () => {
    expect(idFromPrefix(bytes('{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"pad":"xxx'))).toBe(17);
    expect(idFromPrefix(bytes('{ "id" : "a\\"b", "jsonrpc":"2.0"'))).toBe('a"b');
    expect(idFromPrefix(bytes('{"method":"ping","params":{},"id":-3,"pad":"'))).toBe(-3);
  });

  it('skips an "id" nested in params, or standing as a value', () => {
    expect(idFromPrefix(bytes('{"params":{"arguments":{"id":5}},"note":"id","id":9,"pad":"'))).toBe(9);
    expect(idFromPrefix(bytes('{"params":{"arguments":{"id":5},"pad":"xxxxx'))).toBeUndefined();
    expect(idFromPrefix(bytes('{"list":["id",1],"x":{"y":["id"]},"id":"k","z'))).toBe('k');
  });

  it('gives nothing for an id cut off by the end of the prefix, or a null one', () => {
    expect(idFromPrefix(bytes('{"jsonrpc":"2.0","id":12'))).toBeUndefined();
    expect(idFromPrefix(bytes('{"jsonrpc":"2.0","id":"abc'))).toBeUndefined();
    expect(idFromPrefix(bytes('{"jsonrpc":"2.0","id":null,"method":"'))).toBeUndefined();
    expect(idFromPrefix(bytes('[{"id":1}]'))).toBeUndefined();
  });
});

describe('createIdScanner', () => {
  /** Feeds the text in pieces of `size` bytes, as a pipe delivers a line. */
  const scan = (text: string, size: number): ReturnType<typeof createIdScanner> => {
    const scanner = createIdScanner();
    const all = bytes(text);
    for (let at = 0; at < all.length; at += size) scanner.feed(all.subarray(at, at + size));
    scanner.end();
    return scanner;
  };
  const pad = 'x'.repeat(200_000);

  it('19.5.1 finds the id after 200 KB of params, in pieces that cut through it, without nested ids', () => {
    const text = `{"method":"tools/call","params":{"arguments":{"id":5,"pad":"${pad}\\"}"}},"jsonrpc":"2.0","id":"req-\u00e9-42"}`;
    expect(JSON.parse(text).id).toBe('req-é-42');
    for (const size of [1, 7, 64 * 1024]) expect(scan(text, size).id, `pieces of ${size}`).toBe('req-é-42');
    expect(scan(`{"params":{"pad":"${pad}"},"id":1234}`, 3).id).toBe(1234);
    // A number at the very end of the text is whole only once the line has ended.
    const open = createIdScanner();
    open.feed(bytes(`{"params":{},"id":12`));
    expect(open.id).toBeUndefined();
    open.end();
    expect(open.id).toBe(12);
  });

  it('19.5.1 gives nothing for a message without a usable top-level id', () => {
    expect(scan(`{"params":{"id":7,"pad":"${pad}"}}`, 1000).id).toBeUndefined();
    expect(scan(`{"id":null,"params":{"pad":"${pad}"}}`, 1000).id).toBeUndefined();
    expect(scan(`[{"id":1}]`, 1).id).toBeUndefined();
    expect(scan(`{"note":"id","pad":"${pad}"}`, 1000).id).toBeUndefined();
  });
});
