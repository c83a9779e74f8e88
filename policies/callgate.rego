# callgate's default policy: a starting point for a team's own rules.
#
# callgate queries the rules of this package (data.callgate; the prefix is configurable):
#
#   decision        one proposed tool call           {"allow", "approval_required"?,
#                                                     "reasons"?, "approval_ttl_s"?, "quotas"?}
#   may_approve     may this person approve a call?  bool
#   may_resolve     may this operator resolve it?    bool
#   may_read_audit  may this identity read audit?    bool
#   may_list_runs   may it list others' runs?        bool (a subject always lists its own)
#   may_read_quotas may it see these quota keys?     bool
#   may_reset_quotas may it reset this quota key?    bool
#   may_pin_tools   may it list tools' pins / approve a changed definition?  bool
#   offer           tool names to list for a caller  set (undefined: every registered tool)
#   batch_policy    not defined here, so a batch never runs partial writes
#
# Anything undefined, malformed or failing to evaluate is a deny with policy_error, never an
# allow: keep rules total (give a default) and keep decision objects well-typed.
#
# Configuration lives in policies/data.json, which callgate loads at data.callgate.config.
# Rules and data share the path data.callgate: OPA and the embedded engine both merge the two
# documents, so data.callgate.config sits beside data.callgate.decision. Therefore no rule in
# this package may be named `config` (the bundle loader rejects a rule and a data value at the
# same path, as OPA does).
#
#   tenants             tenant -> {"trains": [...], "events": [...]}: what its callers may query
#   role_tools          role -> tool names the role may call ("*" means every tool)
#   write_exempt_roles  roles whose writes need no human approval
#   approval_ttl_s      how long an approval request stays open (default 3600)
#   workshop            the workshop reservation rules (see "Workshop reservations" below)
#
# Rego v1 syntax: `if` before every rule body, `contains` for partial sets.
package callgate

cfg := data.callgate.config

# ---------------------------------------------------------------------------------------------
# Who is calling

# The caller's roles; an identity without a roles array has none.
default caller_roles := []

caller_roles := roles if {
	roles := input.identity.roles
	is_array(roles)
}

default caller_tenant := ""

caller_tenant := tenant if {
	tenant := input.identity.tenant
	is_string(tenant)
}

# How roles and tenant read in reasons: "[organizer, traveler]", "acme".
roles_text := sprintf("[%s]", [concat(", ", sort(caller_roles))])

default tenant_label := "(none)"

tenant_label := caller_tenant if caller_tenant != ""

# ---------------------------------------------------------------------------------------------
# Which tools a role grants

# Every tool name granted by one of the caller's roles ("*" stands for every tool).
granted_tools contains name if {
	some role in caller_roles
	some name in object.get(cfg.role_tools, role, [])
}

# A caller may call a tool if any of its roles grants it.
tool_allowed if input.call.tool in granted_tools

tool_allowed if "*" in granted_tools

# ---------------------------------------------------------------------------------------------
# Reasons to deny a call. Each message says why; decision lists all of them.

# The tool a call names, null when it names none. A reference that is undefined inside
# `not f(...)` makes the expression undefined, not true (OPA evaluates it before the negation):
# the default keeps this rule meaning "no tool name" for a call that has none.
default call_tool := null

call_tool := input.call.tool

deny contains "call names no tool" if not is_string(call_tool)

deny contains msg if {
	is_string(input.call.tool)
	not tool_allowed
	msg := sprintf("tool %s not allowed for roles %s", [input.call.tool, roles_text])
}

# Tenant resource scope: a caller queries only the trains and events of its own tenant.
tenant_resources := object.get(cfg.tenants, caller_tenant, {})

deny contains msg if {
	train := input.call.args.train_number
	not train in object.get(tenant_resources, "trains", [])
	msg := sprintf("train %v is outside tenant %s", [train, tenant_label])
}

deny contains msg if {
	event := input.call.args.event_id
	not event in object.get(tenant_resources, "events", [])
	msg := sprintf("event %v is outside tenant %s", [event, tenant_label])
}

# callgate itself checks that an approval covers these arguments (approval_mismatch) before it
# asks the policy again. No rule here reads input.call.args_sha256, nor input.call.args whole:
# the arguments it decides on are read by name, so calls that differ only in arguments no rule
# looks at (a date, a free-text note) make the same input and reuse one decision
# (docs/policies.md, "Decisions made once").

# ---------------------------------------------------------------------------------------------
# Writes and approval

is_write if input.tool.effect == "write"

is_write if input.call.effect == "write"

write_exempt if {
	some role in caller_roles
	role in cfg.write_exempt_roles
}

# An approved re-check: callgate evaluates decision again with input.approval set. Before
# approval it is JSON null, and `not input.approval` would be false for null, so compare.
approved if input.approval != null

needs_approval if {
	is_write
	not write_exempt
	not approved
	not own_small_booking
}

default approval_ttl_s := 3600

approval_ttl_s := cfg.approval_ttl_s

default approver_name := "an approver"

approver_name := name if {
	name := input.approval.approved_by.subject
	is_string(name)
}

# ---------------------------------------------------------------------------------------------
# decision

# Every clause of the tool, scope and approval rules passed.
permitted if {
	count(deny) == 0
	tool_allowed
}

default decision := {"allow": false, "reasons": ["no rule permitted this call"]}

decision := {"allow": false, "reasons": sort(deny)} if count(deny) > 0

decision := charged({"allow": true, "reasons": [allow_reason]}) if {
	permitted
	not needs_approval
}

decision := charged({
	"allow": false,
	"approval_required": true,
	"approval_ttl_s": approval_ttl_s,
	"reasons": [approval_reason],
}) if {
	permitted
	needs_approval
}

allow_reason := sprintf("write approved by %s", [approver_name]) if {
	is_write
	approved
} else := sprintf("a member's own booking of up to %v seats needs no approval", [seats_without_approval]) if {
	own_small_booking
	not write_exempt
} else := sprintf("write by roles %s needs no approval", [roles_text]) if {
	is_write
} else := sprintf("tool %s allowed for roles %s", [input.call.tool, roles_text])

approval_reason := sprintf("reserving %v seats (more than %v) needs approval by an owner of tenant %s", [input.call.args.seats, seats_without_approval, tenant_label]) if {
	input.call.tool == "reserve_seat"
	"member" in caller_roles
	not reserves_for_others
} else := sprintf("tool %s writes and needs approval by an owner of tenant %s", [input.call.tool, tenant_label])

# ---------------------------------------------------------------------------------------------
# Workshop reservations (the example service in examples/workshop)
#
# data.callgate.config.workshop:
#   seats_without_approval     a member's booking for themself of at most this many seats
#                              needs no approval (default 2); more seats need an owner
#   reserve_for_others_roles   roles that may reserve for someone else (with approval)

workshop := object.get(cfg, "workshop", {})

default seats_without_approval := 2

seats_without_approval := n if {
	n := workshop.seats_without_approval
	is_number(n)
}

# list_events lists the events of one tenant: only the caller's own.
deny contains msg if {
	input.call.tool == "list_events"
	tenant := object.get(input.call.args, "tenant", "")
	tenant != caller_tenant
	msg := sprintf("events of tenant %v are outside tenant %s", [tenant, tenant_label])
}

reserves_for_others if {
	input.call.tool == "reserve_seat"
	input.call.args.participant != input.identity.subject
}

may_reserve_for_others if {
	some role in caller_roles
	role in object.get(workshop, "reserve_for_others_roles", [])
}

deny contains msg if {
	reserves_for_others
	not may_reserve_for_others
	msg := sprintf("a member reserves only for themself, not for %v", [input.call.args.participant])
}

# A member booking a few seats for themself (in their own tenant: the event scope rule above).
own_small_booking if {
	input.call.tool == "reserve_seat"
	"member" in caller_roles
	not reserves_for_others
	seats := object.get(input.call.args, "seats", 1)
	is_number(seats)
	seats <= seats_without_approval
}

# ---------------------------------------------------------------------------------------------
# Quotas (docs/policies.md, "Quotas"): what an allowed call costs, reserved by callgate
#
# data.callgate.config.workshop.reservations_per_day: at most this many reserve_seat calls per
# participant in any 24 hours (0 or absent: no quota).
# data.callgate.config.call_quotas: tool -> {"limit", "window_s"}: at most `limit` calls of
# the tool per caller in any `window_s` seconds.
# callgate rejects a call over a limit (quota_exceeded) and gives the reservation back if the
# call never runs.

default reservations_per_day := 0

reservations_per_day := n if {
	n := workshop.reservations_per_day
	is_number(n)
}

quota_set contains {
	"key": sprintf("%s/seat_reservations/%v", [caller_tenant, input.call.args.participant]),
	"limit": reservations_per_day,
	"window_s": 86400,
	"cost": 1,
} if {
	input.call.tool == "reserve_seat"
	reservations_per_day > 0
}

# (concat, not sprintf: every key here is made of strings, and concat is the cheaper builtin)
quota_set contains {
	"key": concat("/", [caller_tenant, "calls", input.call.tool, input.identity.subject]),
	"limit": limits.limit,
	"window_s": limits.window_s,
	"cost": 1,
} if {
	limits := object.get(cfg, "call_quotas", {})[input.call.tool]
}

quotas := [q | some q in quota_set]

# The decision object with its quotas (none: the object unchanged).
charged(d) := object.union(d, {"quotas": quotas}) if count(quotas) > 0

charged(d) := d if count(quotas) == 0

# A precondition on the run's history would look like this (input.run is null outside a run):
#
#   deny contains "check availability before reserving a seat" if {
#   	input.call.tool == "reserve_seat"
#   	not availability_checked
#   }
#
#   availability_checked if {
#   	some earlier in input.run.calls
#   	earlier.tool == "check_availability"
#   	earlier.status == "SUCCEEDED"
#   }

# ---------------------------------------------------------------------------------------------
# Who may approve, resolve and read audit

# An owner of the requester's tenant approves, but never their own request.
default may_approve := false

may_approve if {
	"owner" in input.approver.roles
	input.approver.subject != input.requester.subject
	input.approver.tenant == input.requester.tenant
}

# An operator of the requester's tenant resolves a call whose outcome is unknown, but never in
# a run of their own: someone other than the requester checks the target system.
default may_resolve := false

may_resolve if {
	"operator" in input.operator.roles
	input.operator.tenant == input.requester.tenant
	input.operator.subject != input.requester.subject
}

# An auditor reads the audit log of its own tenant, and callgate's own records (tenant "":
# policy reloads, prunes), which hold no tenant's data.
default may_read_audit := false

may_read_audit if {
	"auditor" in input.identity.roles
	input.tenant == input.identity.tenant
}

may_read_audit if {
	"auditor" in input.identity.roles
	input.tenant == ""
}

# A subject always reads its own runs (callgate grants this too, without asking).
may_read_audit if {
	input.subject != ""
	input.subject == input.identity.subject
	input.tenant == input.identity.tenant
}

# An operator (who resolves unknown outcomes) and an auditor list the runs of their own tenant:
# one subject's (input.subject) or every subject's (input.subject == ""). A subject lists its
# own runs without being asked about.
default may_list_runs := false

may_list_runs if {
	some role in ["operator", "auditor"]
	role in caller_roles
	input.tenant == caller_tenant
}

# An operator or an auditor sees the quota keys of their own tenant (the keys above start with
# "<tenant>/"; input.prefix is the listing's prefix); an operator resets one of them.
default may_read_quotas := false

may_read_quotas if {
	some role in ["operator", "auditor"]
	role in caller_roles
	startswith(input.prefix, sprintf("%s/", [caller_tenant]))
}

default may_reset_quotas := false

may_reset_quotas if {
	"operator" in caller_roles
	startswith(input.key, sprintf("%s/", [caller_tenant]))
}

# Tools are shared by every tenant, so pinning one is no tenant's business: an operator, an
# auditor or a tools_admin lists the pins and what changed (input.tools: the names asked for);
# only a tools_admin approves a changed definition (input.tool, input.fingerprint,
# input.previous, input.fields).
default may_pin_tools := false

may_pin_tools if {
	is_array(input.tools) # a listing
	some role in ["operator", "auditor", "tools_admin"]
	role in caller_roles
}

may_pin_tools if {
	is_string(input.fingerprint) # an approval
	"tools_admin" in caller_roles
}

# ---------------------------------------------------------------------------------------------
# offer: the tools ListTools shows a caller

# Undefined when one of the caller's roles grants "*": callgate then lists every registered
# tool (this policy does not know the registry).
offer := granted_tools if not "*" in granted_tools
