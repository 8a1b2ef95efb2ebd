'use strict';
// Dredd hooks for contract/openapi.yaml. Dredd makes one transaction per documented response;
// for OpenAPI 3 it neither skips the non-2xx ones nor validates bodies against their schema
// (see ../shared/notes/contract-testing.md). These hooks:
//  - send the bearer token of a key whose limits fit the run (CONTRACT_TOKEN);
//  - rewrite each non-2xx transaction's request so the server really answers that status;
//  - give Gavel the response's JSON Schema (draft-07) and only the *required* headers, so bodies
//    are validated for real and optional headers are not demanded;
//  - check every documented header's value against its schema, the `Allow` of a 405, the
//    Error body's `status` and a 201's `Location`, failing the transaction on any mismatch.
// CommonJS on purpose: package.json says "type": "module" and Dredd require()s its hooks.

const path = require('node:path');
const hooks = require('hooks');
const { checkHeaderValue, deref, loadContract, toDraft07 } = require('./json-schema.cjs');

const doc = loadContract(process.env.CONTRACT_FILE || path.join(__dirname, 'openapi.yaml'));
const TOKEN = process.env.CONTRACT_TOKEN;
/** A key with a quota of a few requests; `beforeAll` uses it up so it gets 429. */
const LIMITED_TOKEN = process.env.CONTRACT_LIMITED_TOKEN;
/** Keys limited to one scope: each gets 403 `insufficient_scope` on the operations of the other. */
const READ_ONLY_TOKEN = process.env.CONTRACT_READ_ONLY_TOKEN;
const WRITE_ONLY_TOKEN = process.env.CONTRACT_WRITE_ONLY_TOKEN;
const MAX_BODY_BYTES = 64 * 1024;
/** Valid JSON, larger than the 64 KiB body limit. */
const BIG_BODY = JSON.stringify({ name: 'x'.repeat(MAX_BODY_BYTES), categoryId: 1 });
const JSON_TYPE = 'application/json';

let setupError = '';
/** Orders `beforeAll` places for the order transactions, by what they are for. */
const orders = { placed: '', toCancel: '', cancelled: '', completed: '' };
/** A well-formed order id no order has. */
const NO_ORDER = `ord_${'0'.repeat(32)}`;

const setAuth = (t, value) => {
  if (value === undefined) delete t.request.headers.Authorization;
  else t.request.headers.Authorization = value;
};
const setBody = (t, contentType, body) => {
  t.request.headers['Content-Type'] = contentType;
  t.request.body = body;
};
const setMethod = (t, method) => {
  t.request.method = method;
};
/** The base path Dredd was given (`/v1`): what `fullPath` has in front of the contract's path. */
const basePath = (t) => t.fullPath.slice(0, t.fullPath.length - t.request.uri.length);
const goTo = (t, pathAndQuery) => {
  t.fullPath = basePath(t) + pathAndQuery;
};

/**
 * A 500 cannot be provoked from outside: every input is validated and refused with a 4xx
 * first, and the in-memory store does not fail. src/api/contract.test.ts checks the 500 response
 * by making the store throw; Schemathesis' `not_a_server_error` asserts no request gets one.
 */
const SKIP_500 = (t) => {
  t.skip = true;
  console.log(`skip: ${t.name}: a 500 cannot be provoked from outside the server`);
  return 'skipped: cannot be provoked';
};
/**
 * A 503 needs the store (or, with `--redis-fail closed`, Redis) to fail, which cannot be done
 * from outside a running server; src/api/pets.test.ts answers it with a failing store and
 * scripts/scale-out.test.ts with Redis stopped.
 */
const SKIP_503 = (t) => {
  t.skip = true;
  console.log(`skip: ${t.name}: a 503 needs the store or Redis to fail`);
  return 'skipped: cannot be provoked';
};
/** Every route sits behind the limiter: a used-up key gets 429 on any of them. */
const LIMITED = (t) => {
  setAuth(t, `Bearer ${LIMITED_TOKEN}`);
  return 'key over its quota';
};
/** A key whose scopes do not include the operation's. */
const READ_ONLY = (t) => {
  setAuth(t, `Bearer ${READ_ONLY_TOKEN}`);
  return 'key with only pets:read';
};
const WRITE_ONLY = (t) => {
  setAuth(t, `Bearer ${WRITE_ONLY_TOKEN}`);
  return 'key with only pets:write';
};
/** A body of valid JSON but larger than 64 KiB. */
const TOO_LARGE = (t) => {
  setBody(t, JSON_TYPE, BIG_BODY);
  return 'body over 64 KiB';
};
/** A query that makes the path and query longer than 8,192 bytes. */
const URI_TOO_LONG = (t) => {
  goTo(t, `/pets?pad=${'a'.repeat(9000)}`);
  return 'path and query over 8 KiB';
};
/** A body that is not `application/json`. */
const NOT_JSON = (t) => {
  setBody(t, 'text/plain', '{"name":"Rex","categoryId":1}');
  return 'text/plain body';
};

/** No Authorization header at all: 401. */
const NO_AUTH = (t) => {
  setAuth(t, undefined);
  return 'no Authorization';
};
/** What every operation answers the same way: over-large bodies and URIs, the used-up key, 500 and 503. */
const EVERYWHERE = {
  413: TOO_LARGE,
  414: URI_TOO_LONG,
  429: LIMITED,
  500: SKIP_500,
  503: SKIP_503,
};

/** `*` matches any current representation (RFC 9110, section 13.1.2): the answer is 304. */
const NOT_MODIFIED = (t) => {
  t.request.headers['If-None-Match'] = '*';
  return 'If-None-Match: *';
};

/** `If-Match` with a tag no version of the pet has: the answer is 412, and nothing changes. */
const STALE = (t) => {
  t.request.headers['If-Match'] = '"1-9007199254740991"';
  return 'If-Match: a tag the pet never had';
};
/** What every operation on `/pets/{petId}` is provoked to answer alike. */
const ON_ONE_PET = {
  400: (t) => goTo(t, '/pets/not-a-number'),
  401: (t) => {
    setAuth(t, 'Basic dXNlcjpwYXNz');
    return 'Basic scheme';
  },
  404: (t) => goTo(t, '/pets/9007199254740991'),
  405: (t) => setMethod(t, 'PUT'),
  ...EVERYWHERE,
};

/**
 * How each documented response of each operation is provoked. Dredd sends the documented
 * request example; each entry changes only what that status needs, and may return a label for
 * the report. Changing `transaction.request.method` is honoured (Dredd passes the request
 * object to its HTTP client as is), so 405s really send another method; only `fullPath`
 * changes the URL.
 */
const PROVOKE = {
  listPets: {
    // `beforeAll` added two available pets: a page of one has a `Link` to the next page, so
    // that (optional) header is there to be checked too.
    200: (t) => goTo(t, '/pets?limit=1&status=available'),
    304: NOT_MODIFIED,
    400: (t) => goTo(t, '/pets?limit=0'),
    401: NO_AUTH,
    403: WRITE_ONLY,
    404: (t) => goTo(t, '/petz'),
    405: (t) => setMethod(t, 'PUT'),
    415: NOT_JSON,
    ...EVERYWHERE,
  },
  createPet: {
    201: () => {},
    400: (t) => {
      setBody(t, JSON_TYPE, '{"name":"Rex","categoryId":"one"}');
      return 'categoryId not an integer';
    },
    401: (t) => {
      setAuth(t, 'Bearer psk_not-a-key-of-this-server');
      return 'unknown key';
    },
    403: READ_ONLY,
    404: (t) => goTo(t, '/petz'),
    405: (t) => setMethod(t, 'PUT'),
    // Dredd sends the documented Idempotency-Key with every createPet request and the 201
    // runs first, so the same key with another body is a real reuse.
    409: (t) => {
      setBody(t, JSON_TYPE, '{"name":"Tom","categoryId":2}');
      return 'Idempotency-Key reused with another body';
    },
    415: NOT_JSON,
    ...EVERYWHERE,
  },
  getRateLimit: {
    200: () => {},
    401: NO_AUTH,
    404: (t) => goTo(t, '/petz'),
    405: (t) => setMethod(t, 'POST'),
    415: NOT_JSON,
    ...EVERYWHERE,
    // Reading the quota spends nothing, so a key is never refused for its windows here (the
    // used-up key reads its ban with 200); its 429 needs 128 requests in flight at once
    // (src/gateway/in-flight.test.ts), or the client address's failed authentications used
    // up, which would turn every later 401 transaction of this run into a 429.
    429: (t) => {
      t.skip = true;
      console.log(`skip: ${t.name}: a 429 needs the in-flight cap held or the address's 401s used up`);
      return 'skipped: cannot be provoked without breaking other transactions';
    },
  },
  getPet: {
    ...ON_ONE_PET,
    // `beforeAll` added pets, so the documented example id 1 exists.
    200: () => {},
    304: NOT_MODIFIED,
    403: WRITE_ONLY,
    415: NOT_JSON,
  },
  updatePet: {
    ...ON_ONE_PET,
    // Rex (id 1, available) becomes pending, the documented example.
    200: () => {},
    400: (t) => {
      t.request.body = '{"status":"lost"}';
      return 'status not a status';
    },
    403: READ_ONLY,
    // Kit (id 3) is sold, which is final.
    409: (t) => {
      goTo(t, '/pets/3');
      t.request.body = '{"status":"available"}';
      return 'a sold pet made available';
    },
    412: STALE,
    415: NOT_JSON,
  },
  deletePet: {
    ...ON_ONE_PET,
    // Tom (id 2) is removed; Rex stays for the transactions after.
    204: (t) => goTo(t, '/pets/2'),
    403: READ_ONLY,
    // `beforeAll` placed an order for pet 4 that stays open until completeOrder's 200.
    409: (t) => {
      goTo(t, '/pets/4');
      return 'an open order holds pet 4';
    },
    412: STALE,
  },
  getInventory: {
    200: () => {},
    304: NOT_MODIFIED,
    401: NO_AUTH,
    403: WRITE_ONLY,
    404: (t) => goTo(t, '/store/inventorz'),
    405: (t) => setMethod(t, 'POST'),
    415: NOT_JSON,
    ...EVERYWHERE,
  },
};

/** The transactions of `completeOrder` and `cancelOrder`, on the order `which` names. */
const closing = (verb, done, closed) => ({
  200: (t) => goTo(t, `/store/orders/${orders[done]}/${verb}`),
  400: (t) => goTo(t, `/store/orders/42/${verb}`),
  401: NO_AUTH,
  403: READ_ONLY,
  404: (t) => {
    goTo(t, `/store/orders/${NO_ORDER}/${verb}`);
    return 'no such order';
  },
  405: (t) => {
    goTo(t, `/store/orders/${orders[done]}/${verb}`);
    setMethod(t, 'GET');
  },
  409: (t) => {
    goTo(t, `/store/orders/${orders[closed]}/${verb}`);
    return `an order ${closed} before`;
  },
  ...EVERYWHERE,
});
Object.assign(PROVOKE, {
  placeOrder: {
    // Dredd sends the documented Idempotency-Key with every placeOrder request and the 201 runs
    // first, so a later one with the key and another pet would be a reuse: the 404 and 409 go without it.
    // Pet 8, added for it: updatePet's transactions made Rex (1) pending.
    201: (t) => {
      setBody(t, JSON_TYPE, '{"petId":8}');
      return 'pet 8, available';
    },
    400: (t) => {
      setBody(t, JSON_TYPE, '{"petId":"one"}');
      return 'petId not an integer';
    },
    401: (t) => {
      setAuth(t, 'Bearer psk_not-a-key-of-this-server');
      return 'unknown key';
    },
    403: READ_ONLY,
    404: (t) => {
      delete t.request.headers['Idempotency-Key'];
      setBody(t, JSON_TYPE, '{"petId":9007199254740991}');
      return 'no such pet';
    },
    405: (t) => setMethod(t, 'PUT'),
    409: (t) => {
      delete t.request.headers['Idempotency-Key'];
      setBody(t, JSON_TYPE, '{"petId":3}');
      return 'pet 3 is sold';
    },
    415: NOT_JSON,
    ...EVERYWHERE,
  },
  listOrders: {
    // `beforeAll` placed several orders: a page of one has a `Link` to the next.
    200: (t) => goTo(t, '/store/orders?limit=1'),
    400: (t) => goTo(t, '/store/orders?status=sold'),
    401: NO_AUTH,
    403: WRITE_ONLY,
    404: (t) => goTo(t, '/store/orderz'),
    405: (t) => setMethod(t, 'PUT'),
    415: NOT_JSON,
    ...EVERYWHERE,
  },
  getOrder: {
    200: (t) => goTo(t, `/store/orders/${orders.placed}`),
    400: (t) => goTo(t, '/store/orders/42'),
    401: (t) => {
      setAuth(t, 'Basic dXNlcjpwYXNz');
      return 'Basic scheme';
    },
    403: WRITE_ONLY,
    404: (t) => {
      goTo(t, `/store/orders/${NO_ORDER}`);
      return 'no such order';
    },
    405: (t) => {
      goTo(t, `/store/orders/${orders.placed}`);
      setMethod(t, 'PUT');
    },
    415: NOT_JSON,
    ...EVERYWHERE,
  },
  completeOrder: closing('complete', 'placed', 'cancelled'),
  cancelOrder: closing('cancel', 'toCancel', 'completed'),
});

hooks.beforeAll((transactions, done) => {
  prepare(transactions[0]).then(
    () => done(),
    (err) => {
      setupError = `beforeAll failed: ${err.message}`;
      done();
    },
  );
});

hooks.beforeEach((t) => {
  const resource = doc.paths[t.origin.resourceName];
  const operation = resource?.[t.request.method.toLowerCase()];
  const status = t.expected.statusCode;
  const response = operation && deref(doc, operation.responses[status]);
  if (setupError || !TOKEN || !LIMITED_TOKEN || !READ_ONLY_TOKEN || !WRITE_ONLY_TOKEN) {
    t.fail =
      setupError ||
      'CONTRACT_TOKEN, CONTRACT_LIMITED_TOKEN, CONTRACT_READ_ONLY_TOKEN and CONTRACT_WRITE_ONLY_TOKEN must be set';
    return;
  }
  const provoke = PROVOKE[operation?.operationId]?.[status];
  if (!response || !provoke) {
    t.fail = `no hook provokes ${t.name}: add it to PROVOKE in contract/dredd-hooks.cjs`;
    return;
  }
  t.contract = { resource, response, status: Number(status) };
  setAuth(t, `Bearer ${TOKEN}`);
  // Dredd sends the documented example of every header; a pet's tag changes with each change,
  // so the example's would make later changes 412. Only STALE sends one.
  delete t.request.headers['If-Match'];
  const label = provoke(t);
  // The report's test name: what is really sent, not the documented example.
  const shown = t.fullPath.length > 200 ? `${t.fullPath.slice(0, 60)}…(${t.fullPath.length} bytes)` : t.fullPath;
  t.id = `${t.request.method} (${status}) ${shown}${label ? ` [${label}]` : ''}`;
  t.expected.headers = expectedHeaders(response);
  const media = response.content?.[JSON_TYPE];
  if (media) t.expected.bodySchema = toDraft07(doc, media.schema);
});

hooks.afterEach((t) => {
  if (t.skip || !t.contract || !t.real) return;
  const problems = [...headerProblems(t), ...bodyProblems(t)];
  if (problems.length) t.fail = problems.join('; ');
});

/** Content-Type and the response's required headers: Gavel checks they are present. */
function expectedHeaders(response) {
  // A 304 has no body, hence no Content-Type.
  const headers = response.content ? { 'Content-Type': JSON_TYPE } : {};
  for (const [name, header] of Object.entries(response.headers || {})) {
    const h = deref(doc, header);
    if (h.required) headers[name] = String(h.example ?? '');
  }
  return headers;
}

/** Every documented header that is present must match its schema; 405's `Allow` must be exact. */
function headerProblems(t) {
  const real = Object.fromEntries(Object.entries(t.real.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
  const problems = [];
  for (const [name, header] of Object.entries(t.contract.response.headers || {})) {
    const value = real[name.toLowerCase()];
    if (value !== undefined) problems.push(...checkHeaderValue(name, value, toDraft07(doc, deref(doc, header).schema)));
  }
  if (t.contract.status === 405) {
    const served = Object.keys(t.contract.resource)
      .filter((k) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(k))
      .map((m) => m.toUpperCase())
      .sort();
    const allow = (real.allow || '')
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean)
      .sort();
    if (allow.join() !== served.join()) problems.push(`Allow: "${real.allow}" should list ${served.join(', ')}`);
  }
  return problems;
}

/** An Error body repeats the response's status; a 201's `Location` (relative) names the new pet's id. */
function bodyProblems(t) {
  let body;
  try {
    body = JSON.parse(t.real.body);
  } catch {
    return []; // Gavel already reports a body that is not JSON.
  }
  if (t.contract.status >= 400 && body.status !== t.real.statusCode) {
    return [`body.status ${body.status} is not ${t.real.statusCode}`];
  }
  const location = t.real.headers.location;
  // Relative to the request URL: `pets/{id}` from /v1/pets, `orders/{id}` from /v1/store/orders.
  const made = `${t.origin.resourceName.split('/').pop()}/${body.id}`;
  if (t.contract.status === 201 && location !== undefined && String(location) !== made) {
    return [`Location ${location} does not name the new resource ${made}`];
  }
  return [];
}

/**
 * Adds pets for the 200s (1 and 2 available, 3 sold, 4 to 8 for orders), places the orders the
 * order transactions need, and uses up the limited key's quota for the 429s.
 */
async function prepare(first) {
  const origin = `${first.protocol}//${first.host}:${first.port}${basePath(first)}`;
  const send = (token, init = {}, path = '/pets') =>
    fetch(`${origin}${path}`, { ...init, headers: { Authorization: `Bearer ${token}`, ...init.headers } });
  for (const pet of [
    { name: 'Rex', categoryId: 1, status: 'available' },
    { name: 'Tom', categoryId: 2, status: 'available' },
    { name: 'Kit', categoryId: 2, status: 'sold' },
    ...[4, 5, 6, 7, 8].map((n) => ({ name: `Pup ${n}`, categoryId: 3, status: 'available' })),
  ]) {
    const res = await send(TOKEN, {
      method: 'POST',
      headers: { 'Content-Type': JSON_TYPE },
      body: JSON.stringify(pet),
    });
    // Any 2xx will do here: whether it is the documented 201 is createPet's transaction's job.
    if (!res.ok) throw new Error(`adding a pet answered ${res.status}`);
  }
  const post = async (path, body) => {
    const res = await send(TOKEN, { method: 'POST', headers: { 'Content-Type': JSON_TYPE }, body }, path);
    if (!res.ok) throw new Error(`POST ${path} answered ${res.status}`);
    return res.json();
  };
  for (const [which, petId] of [
    ['placed', 4],
    ['toCancel', 5],
    ['cancelled', 6],
    ['completed', 7],
  ]) {
    orders[which] = (await post('/store/orders', JSON.stringify({ petId }))).id;
  }
  await post(`/store/orders/${orders.cancelled}/cancel`);
  await post(`/store/orders/${orders.completed}/complete`);
  for (let i = 0; i < 100; i++) {
    const res = await send(LIMITED_TOKEN);
    await res.arrayBuffer();
    if (res.status === 429) return;
  }
  throw new Error('the limited key never got 429: give it a quota of a few requests');
}
