import { describe, expect, test } from 'bun:test';
import { silentLogger } from '../../log.ts';
import { EVERY_PET } from '../change-counter.ts';
import {
  ANNOUNCE_GATHER_MS,
  announcement,
  heard,
  type ListenSession,
  MOST_IDS_ANNOUNCED,
  PetChanges,
} from './postgres-changes.ts';

describe("an instance's announcement of its writes", () => {
  test('names the instance, the pets once each, and whether pets came or went or a status changed', () => {
    const payload = announcement('a1b2c3d4', [
      { ids: [7], statuses: true },
      { ids: [9, 7] },
      { ids: [12], members: true },
    ]);
    expect(payload).toBe('a1b2c3d4:sm:7,9,12');
    expect(heard(payload)).toEqual({ from: 'a1b2c3d4', change: { ids: [7, 9, 12], members: true, statuses: true } });
    expect(heard(announcement('a1b2c3d4', [{ ids: [3] }]))).toEqual({
      from: 'a1b2c3d4',
      change: { ids: [3], members: false, statuses: false },
    });
  });

  test('says every pet for a change of every pet, or for more pets than one payload names', () => {
    expect(announcement('a1', [{ ids: [1] }, EVERY_PET])).toBe('a1:*:');
    const many = Array.from({ length: MOST_IDS_ANNOUNCED + 1 }, (_, i) => i + 1);
    expect(announcement('a1', [{ ids: many }])).toBe('a1:*:');
    expect(heard('a1:*:')).toEqual({ from: 'a1', change: EVERY_PET });
  });

  test("hears the trigger's empty payload, an older instance's and anything malformed as every pet", () => {
    for (const payload of ['', 'x', 'a1:s', 'a1:s:1:2', 'a1::7,x', ':s:7', 'a1::1.5']) {
      expect(heard(payload).change).toBe(EVERY_PET);
    }
  });
});

describe('announcing this instance’s writes', () => {
  const never: ListenSession = () => {
    throw new Error('not listening in this test');
  };

  test('writes that end within a few milliseconds of each other share one announcement', async () => {
    const sent: string[] = [];
    const changes = new PetChanges(
      never,
      async (payload) => {
        sent.push(payload.replace(/^[0-9a-f]{8}:/, '<instance>:'));
      },
      silentLogger,
    );
    changes.written({ ids: [7] });
    // The first write's announcement would have been answered by now, were it sent at once.
    await new Promise((resolve) => setImmediate(resolve));
    changes.written({ ids: [9], statuses: true });
    await Bun.sleep(ANNOUNCE_GATHER_MS + 50);
    expect(sent).toEqual(['<instance>:s:7,9']);
    changes.written({ ids: [3] });
    await Bun.sleep(ANNOUNCE_GATHER_MS + 50);
    expect(sent).toEqual(['<instance>:s:7,9', '<instance>::3']);
  });

  test('a write still gathered when the store closes is announced before it closes', async () => {
    const sent: string[] = [];
    const changes = new PetChanges(never, async (payload) => void sent.push(payload.slice(9)), silentLogger);
    changes.written({ ids: [4], members: true });
    await changes.close();
    expect(sent).toEqual(['m:4']);
  });
});
