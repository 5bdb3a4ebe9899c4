import { describe, expect, it } from 'vitest';
import { parseOracleUrl } from '../src/url.ts';

describe('parseOracleUrl', () => {
  it('turns an oracle:// URL into credentials and an Easy Connect string', () => {
    expect(parseOracleUrl('oracle://engram:engram@127.0.0.1:1521/FREEPDB1')).toEqual({
      user: 'engram',
      password: 'engram',
      connectString: '127.0.0.1:1521/FREEPDB1',
    });
  });

  it('decodes the user and password, keeps IPv6 brackets and Easy Connect Plus parameters', () => {
    expect(parseOracleUrl('oracle://app%40x:p%3Ass%2Fw@[::1]/FREEPDB1?transport_connect_timeout=3')).toEqual({
      user: 'app@x',
      password: 'p:ss/w',
      connectString: '[::1]/FREEPDB1?transport_connect_timeout=3',
    });
  });

  it.each([
    ['not a url', /not a URL/],
    ['postgres://u:p@h/db', /oracle:\/\//],
    ['oracle://u:p@h:1521', /service/],
    ['oracle://h:1521/FREEPDB1', /user/],
  ])('rejects %j', (url, message) => {
    expect(() => parseOracleUrl(url)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) }),
    );
  });
});
