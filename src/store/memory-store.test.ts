import { describeStore } from '../../test/store-conformance.ts';
import { MemoryStore } from './memory-store.ts';

describeStore('MemoryStore', async () => ({ store: new MemoryStore(), dispose: async () => {} }));
