import { describe, expect, test } from 'bun:test';
import type { Reply } from '../core/reply.ts';
import { AnswerMemo } from './memo.ts';

const page = (n: number): Reply => ({ status: 200, body: `[${n}]`, type: 'application/json' });

describe('AnswerMemo', () => {
  test('keeps an answer from its second asking on, while the version holds', () => {
    const memo = new AnswerMemo();
    memo.set('/v1/pets', 1, page(1));
    expect(memo.get('/v1/pets', 1)).toBeUndefined();
    memo.set('/v1/pets', 1, page(1));
    expect(memo.get('/v1/pets', 1)).toEqual(page(1));
    expect(memo.get('/v1/pets', 2)).toBeUndefined();
    // Read again at the new version: kept again at once, the key is known.
    memo.set('/v1/pets', 2, page(2));
    expect(memo.get('/v1/pets', 2)).toEqual(page(2));
  });

  test('keeps nothing for a store that cannot tell its version', () => {
    const memo = new AnswerMemo();
    memo.set('/v1/pets', undefined, page(1));
    memo.set('/v1/pets', undefined, page(1));
    expect(memo.get('/v1/pets', undefined)).toBeUndefined();
  });

  test('holds at most its bytes of bodies, the least recently used out first', () => {
    const memo = new AnswerMemo(10);
    for (const key of ['a', 'b', 'c']) {
      memo.set(key, 1, { status: 200, body: 'xxxx', type: 'application/json' });
      memo.set(key, 1, { status: 200, body: 'xxxx', type: 'application/json' });
    }
    expect([memo.get('a', 1), memo.get('b', 1)?.body, memo.get('c', 1)?.body]).toEqual([undefined, 'xxxx', 'xxxx']);
  });
});
