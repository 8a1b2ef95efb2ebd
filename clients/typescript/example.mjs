// The README's example: PETSTORE_URL (ending in /v1) and PETSTORE_API_KEY from the environment.
import { createClient, PetstoreError } from '@petstore/client';

const petstore = createClient({ apiKey: process.env.PETSTORE_API_KEY, baseUrl: process.env.PETSTORE_URL });
const rex = await petstore.createPet({ name: 'Rex', categoryId: 1 });
console.log(`created ${rex.name} (id ${rex.id}, ${rex.status})`);
for await (const pet of petstore.listAllPets({ status: 'available', limit: 100 }))
  console.log(`listed ${pet.id} ${pet.name}`);
try {
  await petstore.listPets({ limit: 1000 });
} catch (error) {
  if (!(error instanceof PetstoreError)) throw error;
  console.log(`refused: ${error.status} ${error.code}: ${error.message}`);
}
