/** The id an over-long stdio line is answered under, read from the line's start alone. */
import { describe, expect, it } from 'vitest';
import { idFromPrefix } from '../src/protocol/json-rpc.js';

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
