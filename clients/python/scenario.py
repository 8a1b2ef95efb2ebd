"""What an integrator's Python code does with a client generated from contract/openapi.yaml.

openapi-python-client generates the package `petstore_client` (`make client-test` puts it in
dist/clients/python); this script creates, lists page by page, gets, changes with If-Match,
removes, sends a wrong key (401), reads the quota without spending it and uses the key's quota
up (429) against PETSTORE_URL (ending in /v1) with PETSTORE_TOKEN, a key of 11 requests a
minute. Every check is exact; the first that fails exits 1.
"""

import os
import re
import sys
from urllib.parse import parse_qs, urljoin, urlparse

from petstore_client import AuthenticatedClient
from petstore_client.api.animals import create_pet, delete_pet, get_pet, list_pets, update_pet
from petstore_client.api.quota import get_rate_limit
from petstore_client.models import Error, ErrorCode, NewPet, NewPetStatus, Pet, PetPatch, PetStatus

BASE_URL = os.environ["PETSTORE_URL"]
client = AuthenticatedClient(base_url=BASE_URL, token=os.environ["PETSTORE_TOKEN"])


def step(name: str) -> None:
    print(f"python client: {name}", flush=True)


def check(actual, expected, what: str) -> None:
    if actual != expected:
        sys.exit(f"python client: {what}: expected {expected!r}, got {actual!r}")


step("create three pets, the first without status")
wanted = [
    Pet(id=1, name="Rex", category_id=1, status=PetStatus.AVAILABLE),
    Pet(id=2, name="Tom", category_id=2, status=PetStatus.PENDING),
    Pet(id=3, name="Kit", category_id=9007199254740991, status=PetStatus.SOLD),
]
bodies = [
    NewPet(name="Rex", category_id=1),
    NewPet(name="Tom", category_id=2, status=NewPetStatus.PENDING),
    NewPet(name="Kit", category_id=9007199254740991, status=NewPetStatus.SOLD),
]
check(bodies[0].to_dict(), {"name": "Rex", "categoryId": 1}, "a body without status")
tags = []
for body, pet in zip(bodies, wanted, strict=True):
    res = create_pet.sync_detailed(client=client, body=body)
    check(res.status_code, 201, f"create {pet.name}")
    tags.append(res.headers.get("etag"))
    check(res.parsed, pet, f"create {pet.name}: body")
    # Relative to the request URL (.../v1/pets), so it keeps any prefix a proxy serves the API under.
    check(res.headers.get("location"), f"pets/{pet.id}", f"create {pet.name}: Location")

step("list with limit=2, then follow the Link header")
first = list_pets.sync_detailed(client=client, limit=2)
check(first.status_code, 200, "first page")
check(first.parsed, wanted[:2], "first page: body")
link = first.headers.get("link")
check(link, '<pets?limit=2&cursor=2>; rel="next"', "first page: Link")
match = re.fullmatch(r'<([^>]+)>; rel="next"', link or "")
query = parse_qs(urlparse(urljoin(f"{BASE_URL}/pets", match.group(1) if match else "")).query)
second = list_pets.sync_detailed(client=client, limit=2, cursor=query["cursor"][0])
check(second.status_code, 200, "second page")
check(second.parsed, wanted[2:], "second page: body")
check(second.headers.get("link"), None, "second page: Link")

step("get one pet (deprecated getPet, with its headers)")
one = get_pet.sync_detailed(client=client, pet_id=2)
check(one.status_code, 200, "get")
check(one.parsed, wanted[1], "get: body")
check(one.headers.get("deprecation"), "@1767225600", "get: Deprecation")

step("change Rex with the ETag its create answered; that tag again is 412; remove Tom")
changed = update_pet.sync_detailed(client=client, pet_id=1, body=PetPatch(name="Max"), if_match=tags[0])
check(changed.status_code, 200, "change")
check(changed.parsed, Pet(id=1, name="Max", category_id=1, status=PetStatus.AVAILABLE), "change: body")
check(changed.headers.get("etag") not in (None, tags[0]), True, "change: a new ETag")
stale = update_pet.sync_detailed(client=client, pet_id=1, body=PetPatch(status=PetStatus.SOLD), if_match=tags[0])
check((stale.status_code, stale.parsed.code), (412, ErrorCode.PRECONDITION_FAILED), "a stale ETag")
removed = delete_pet.sync_detailed(client=client, pet_id=2)
check(removed.status_code, 204, "remove")

step("a wrong key is 401 with the Error body")
keyless = AuthenticatedClient(base_url=BASE_URL, token="psk_not-a-key")
refused = list_pets.sync_detailed(client=keyless)
check(refused.status_code, 401, "wrong key")
check(
    refused.parsed,
    Error(code=ErrorCode.UNAUTHORIZED, message="The API key is malformed or unknown.", status=401),
    "wrong key: body",
)
check(
    refused.headers.get("www-authenticate"),
    'Bearer realm="petstore", error="invalid_token"',
    "wrong key: WWW-Authenticate",
)

step("read the quota: 2 of 11 left, and reading it any number of times spends none")
for _ in range(3):
    quota = get_rate_limit.sync_detailed(client=client)
    check(quota.status_code, 200, "quota")
    check(
        [(w.name.value, w.limit, w.remaining) for w in quota.parsed.windows],
        [("minute", 11, 2), ("day", 1000, 991)],
        "quota: windows",
    )
    check((quota.parsed.consumer, quota.parsed.plan, quota.parsed.ban), ("client", "enterprise", None), "quota: whose")
    check(str(quota.parsed.windows[0].reset), quota.headers.get("x-ratelimit-reset"), "quota: reset as in the header")

step("the key has 2 of its 11 requests a minute left; the third is 429")
for left in ["1", "0"]:
    page = list_pets.sync_detailed(client=client, status=PetStatus.SOLD)
    check(page.status_code, 200, "filtered list")
    check(page.parsed, [wanted[2]], "filtered list: body")
    check(page.headers.get("x-ratelimit-remaining"), left, "filtered list: X-RateLimit-Remaining")
limited = list_pets.sync_detailed(client=client)
check(limited.status_code, 429, "over quota")
check(isinstance(limited.parsed, Error), True, "over quota: an Error body")
check((limited.parsed.code, limited.parsed.status), (ErrorCode.RATE_LIMITED, 429), "over quota: code and status")
check(limited.headers.get("x-ratelimit-remaining"), "0", "over quota: X-RateLimit-Remaining")
retry_after = limited.headers.get("retry-after", "")
check(retry_after.isdigit() and 1 <= int(retry_after) <= 61, True, f"over quota: Retry-After {retry_after!r}")
spent = get_rate_limit.sync_detailed(client=client)
check((spent.status_code, spent.parsed.windows[0].remaining), (200, 0), "quota read when spent")

step("all checks passed")
