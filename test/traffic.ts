/**
 * Steady traffic through a changing set of servers, for the upgrade tests: four clients, half
 * creating pets and half listing them, each request to the next server of `live` (which the
 * test changes as a balancer would), until `stop()`. Every status is tallied and every 201 kept.
 */
import type { Running } from './harness.ts';

export interface Traffic {
  readonly statuses: Record<number, number>;
  readonly acks: { id: number; name: string }[];
  /** Resolves once no request to `server` is in flight; call it after taking `server` out of `live`. */
  drain(server: Running): Promise<void>;
  stop(): Promise<void>;
}

export function steadyTraffic(live: Running[], token: string): Traffic {
  const statuses: Record<number, number> = {};
  const acks: { id: number; name: string }[] = [];
  const auth = { authorization: `Bearer ${token}` };
  const inFlight = new Map<Running, number>();
  let running = true;
  let n = 0;
  const clients = Array.from({ length: 4 }, async (_, c) => {
    while (running) {
      const server = live[n % live.length] as Running;
      const name = `pet-${n++}`;
      inFlight.set(server, (inFlight.get(server) ?? 0) + 1);
      let res: Response;
      let body: { id: number };
      try {
        res =
          c % 2 === 0
            ? await fetch(`${server.url}/v1/pets`, {
                method: 'POST',
                headers: { ...auth, 'content-type': 'application/json' },
                body: JSON.stringify({ name, categoryId: 1 }),
              })
            : await fetch(`${server.url}/v1/pets?limit=20`, { headers: auth });
        body = (await res.json()) as { id: number };
      } finally {
        inFlight.set(server, (inFlight.get(server) ?? 1) - 1);
      }
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 201) acks.push({ id: body.id, name });
    }
  });
  return {
    statuses,
    acks,
    async drain(server) {
      while ((inFlight.get(server) ?? 0) > 0) await Bun.sleep(5);
    },
    async stop() {
      running = false;
      await Promise.all(clients);
    },
  };
}

/** The ids of `pets` that `server` does not serve as acknowledged (a 200 with the same name). */
export async function notServed(server: Running, token: string, pets: readonly { id: number; name: string }[]) {
  const missing: number[] = [];
  for (const pet of pets) {
    const res = await fetch(`${server.url}/v1/pets/${pet.id}`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { name?: string };
    if (res.status !== 200 || body.name !== pet.name) missing.push(pet.id);
  }
  return missing;
}
