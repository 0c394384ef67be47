// A dashboard's first steps with the generated client: create a lead, page through "my" leads, move one to
// another stage, and tell the API's refusals apart by their error code. The test
// tests/integration/platform/test_api_typescript_client.py compiles this file under `tsc --strict` against
// types generated from the document the API serves, so a document that breaks a client breaks the test.
import createClient from "openapi-fetch";

import type { components, paths } from "./api";

type ApiError = components["schemas"]["Error"];
// API Gateway's own 401 (`{"message": "Unauthorized"}`), answered before the API runs.
type GatewayUnauthorized = components["schemas"]["GatewayUnauthorized"];
type Refusal = ApiError | GatewayUnauthorized;
type Lead = components["schemas"]["Lead"];
type LeadListItem = components["schemas"]["LeadListItem"];

// Compile-time checks: an error body that stopped being one of these two (unknown, any, a bare string)
// must fail the build, not slip through as something assignable.
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(_proof: T): void {}

export function leadCrm(baseUrl: string, token: string) {
  return createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } });
}

export type LeadCrm = ReturnType<typeof leadCrm>;

/** What a dashboard shows for a refusal: the stable code decides, the message is for people. */
export function describeRefusal(status: number, refusal: Refusal): string {
  if (!("error" in refusal)) {
    return "Your session has ended: sign in again.";
  }
  switch (refusal.error.code) {
    case "DUPLICATE_LEAD":
      return "This person is already a lead here.";
    case "VALIDATION_FAILED":
      return `Check the form: ${refusal.error.message}`;
    default:
      return `${status} ${refusal.error.code}: ${refusal.error.message}`;
  }
}

export async function createLead(api: LeadCrm, orgId: string, idempotencyKey: string): Promise<Lead | string> {
  const { data, error, response } = await api.POST("/organizations/{orgId}/leads", {
    params: { path: { orgId }, header: { "idempotency-key": idempotencyKey } },
    body: { name: "Ada Lovelace", email: "ada@example.com", phone: "+44 20 7946 0000" },
  });
  if (error !== undefined) {
    assertType<Equals<typeof error, Refusal>>(true);
    return describeRefusal(response.status, error);
  }
  return data.data;
}

/** Every open lead assigned to the caller, page by page through `nextCursor`. */
export async function myLeads(api: LeadCrm, orgId: string): Promise<LeadListItem[]> {
  const leads: LeadListItem[] = [];
  let cursor: string | undefined;
  do {
    const { data, error, response } = await api.GET("/organizations/{orgId}/leads", {
      params: { path: { orgId }, query: { assignee: "me", limit: 50, cursor } },
    });
    if (error !== undefined) {
      throw new Error(describeRefusal(response.status, error));
    }
    leads.push(...data.data);
    cursor = data.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return leads;
}

export async function moveToStage(api: LeadCrm, orgId: string, leadId: string, stageId: string): Promise<string> {
  const { data, error, response } = await api.PATCH("/organizations/{orgId}/leads/{leadId}", {
    params: { path: { orgId, leadId } },
    body: { stageId },
  });
  if (error !== undefined) {
    return describeRefusal(response.status, error);
  }
  return data.data.status;
}
