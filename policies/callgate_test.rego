# Unit tests of the default policy: `callgate policy test policies`.
#
# Every rule is tested on its allow and its deny paths. Tests build full call inputs in the
# shape callgate sends (docs/policies.md) and read the configuration from policies/data.json.
package callgate_test

import data.callgate

# ---------------------------------------------------------------------------------------------
# Fixtures

person(subject, tenant, roles) := {"subject": subject, "tenant": tenant, "roles": roles, "claims": {}}

alice := person("alice", "acme", ["traveler"])

olga := person("olga", "acme", ["organizer"])

gina := person("gina", "globex", ["organizer"])

tess := person("tess", "acme", ["tester"])

trusted := person("trudy", "acme", ["organizer", "trusted_writer"])

owen := person("owen", "acme", ["owner"])

globex_owner := person("gus", "globex", ["owner"])

oscar := person("oscar", "acme", ["operator"])

audrey := person("audrey", "acme", ["auditor"])

call(tool, effect, args, who) := {
	"action": "call",
	"call": {
		"id": "call-1",
		"tool": tool,
		"tool_version": "1.0.0",
		"effect": effect,
		"args": args,
		"args_sha256": "sha-of-args",
	},
	"tool": {"name": tool, "version": "1.0.0", "effect": effect, "labels": {}},
	"identity": who,
	"run": {
		"id": "run-1", "turn": 1, "turn_id": "turn-1", "tool_calls_used": 0, "labels": {},
		"calls": [],
	},
	"batch": {"size": 1, "calls": [{"id": "call-1", "tool": tool, "effect": effect}]},
	"approval": null,
	"now": "2026-11-29T21:00:00Z",
}

approval_by(who, args_sha256) := {
	"id": "appr-1",
	"approved_by": who,
	"decided_at": "2026-11-29T21:01:00Z",
	"expires_at": "2026-11-29T22:00:00Z",
	"args_sha256": args_sha256,
}

approved_call(tool, args, who, approver) := object.union(
	call(tool, "write", args, who),
	{"approval": approval_by(approver, "sha-of-args")},
)

# ---------------------------------------------------------------------------------------------
# decision: tool allowlist by role

test_traveler_reads_train_status if {
	d := callgate.decision with input as call("get_train_status", "read", {"train_number": "ICE123"}, alice)
	d.allow == true
	d.reasons == ["tool get_train_status allowed for roles [traveler]"]
}

test_traveler_reads_weather_without_resources if {
	d := callgate.decision with input as call("get_weather", "read", {"city": "Berlin"}, alice)
	d.allow == true
}

test_traveler_may_not_check_availability if {
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-acme-1"}, alice)
	d.allow == false
	not d.approval_required
	d.reasons == ["tool check_availability not allowed for roles [traveler]"]
}

test_any_role_of_the_caller_may_allow if {
	both := person("bea", "acme", ["traveler", "organizer"])
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-acme-1"}, both)
	d.allow == true
}

test_unknown_tool_denied if {
	d := callgate.decision with input as call("launch_rocket", "read", {}, olga)
	d.allow == false
	d.reasons == ["tool launch_rocket not allowed for roles [organizer]"]
}

test_tester_may_call_every_tool if {
	d := callgate.decision with input as call("launch_rocket", "read", {}, tess)
	d.allow == true
}

test_caller_without_roles_denied if {
	d := callgate.decision with input as call("get_weather", "read", {}, person("nobody", "acme", []))
	d.allow == false
	d.reasons == ["tool get_weather not allowed for roles []"]
}

test_caller_without_identity_denied if {
	d := callgate.decision with input as object.remove(call("get_weather", "read", {}, alice), ["identity"])
	d.allow == false
}

test_approval_roles_get_no_tools if {
	every who in [owen, oscar, audrey] {
		d := callgate.decision with input as call("get_weather", "read", {}, who)
		d.allow == false
	}
}

test_call_without_tool_name_denied if {
	d := callgate.decision with input as {"action": "call", "call": {"args": {}}, "identity": olga}
	d.allow == false
	d.reasons == ["call names no tool"]
}

# ---------------------------------------------------------------------------------------------
# decision: tenant resource scope

test_train_of_other_tenant_denied if {
	d := callgate.decision with input as call("get_train_status", "read", {"train_number": "TGV9"}, alice)
	d.allow == false
	d.reasons == ["train TGV9 is outside tenant acme"]
}

test_unknown_train_denied if {
	d := callgate.decision with input as call("get_train_status", "read", {"train_number": "ICE999"}, alice)
	d.allow == false
	d.reasons == ["train ICE999 is outside tenant acme"]
}

test_globex_reads_its_own_train if {
	d := callgate.decision with input as call("get_train_status", "read", {"train_number": "TGV9"}, gina)
	d.allow == true
}

test_event_of_own_tenant_allowed if {
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-acme-2"}, olga)
	d.allow == true
}

test_event_of_other_tenant_denied if {
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-acme-1"}, gina)
	d.allow == false
	d.reasons == ["event ws-acme-1 is outside tenant globex"]
}

test_unknown_tenant_has_no_resources if {
	stranger := person("sam", "initech", ["traveler"])
	d := callgate.decision with input as call("get_train_status", "read", {"train_number": "ICE123"}, stranger)
	d.allow == false
	d.reasons == ["train ICE123 is outside tenant initech"]
}

test_tester_is_still_scoped_to_its_tenant if {
	d := callgate.decision with input as call("get_train_status", "read", {"train_number": "TGV9"}, tess)
	d.allow == false
}

test_all_reasons_are_listed if {
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-globex-1"}, alice)
	d.allow == false
	d.reasons == [
		"event ws-globex-1 is outside tenant acme",
		"tool check_availability not allowed for roles [traveler]",
	]
}

# ---------------------------------------------------------------------------------------------
# decision: writes and approval

test_write_needs_approval if {
	d := callgate.decision with input as call("reserve_seat", "write", {"event_id": "ws-acme-1"}, olga)
	d.allow == false
	d.approval_required == true
	d.approval_ttl_s == 3600
	d.reasons == ["tool reserve_seat writes and needs approval by an owner of tenant acme"]
}

test_approval_ttl_comes_from_data if {
	d := callgate.decision with input as call("cancel_seat", "write", {"event_id": "ws-acme-1"}, olga)
		with data.callgate.config.approval_ttl_s as 600
	d.approval_ttl_s == 600
}

test_write_effect_of_the_tool_counts if {
	inp := object.union(call("reserve_seat", "read", {"event_id": "ws-acme-1"}, olga), {"tool": {"effect": "write"}})
	d := callgate.decision with input as inp
	d.approval_required == true
}

test_denied_write_needs_no_approval if {
	d := callgate.decision with input as call("reserve_seat", "write", {"event_id": "ws-globex-1"}, olga)
	d.allow == false
	not d.approval_required
}

test_approved_write_allowed if {
	d := callgate.decision with input as approved_call("reserve_seat", {"event_id": "ws-acme-1"}, olga, owen)
	d.allow == true
	not d.approval_required
	d.reasons == ["write approved by owen"]
}

test_approved_write_still_scoped if {
	d := callgate.decision with input as approved_call("reserve_seat", {"event_id": "ws-globex-1"}, olga, owen)
	d.allow == false
}

test_approved_write_still_needs_the_tool if {
	d := callgate.decision with input as approved_call("reserve_seat", {"event_id": "ws-acme-1"}, alice, owen)
	d.allow == false
}

test_trusted_writer_writes_without_approval if {
	d := callgate.decision with input as call("reserve_seat", "write", {"event_id": "ws-acme-1"}, trusted)
	d.allow == true
	not d.approval_required
}

test_trusted_writer_alone_has_no_tools if {
	d := callgate.decision with input as call("reserve_seat", "write", {"event_id": "ws-acme-1"}, person("t", "acme", ["trusted_writer"]))
	d.allow == false
}

test_tester_write_needs_approval if {
	d := callgate.decision with input as call("anything", "write", {}, tess)
	d.approval_required == true
}

test_reads_need_no_approval if {
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-acme-1"}, olga)
	d.allow == true
	not d.approval_required
}

# ---------------------------------------------------------------------------------------------
# decision: workshop reservations

mia := person("mia", "acme", ["member"])

seat_args(participant, seats) := {"event_id": "ws-acme-1", "participant": participant, "seats": seats}

test_member_books_a_seat_for_themself_without_approval if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("mia", 1), mia)
	d.allow == true
	not d.approval_required
	d.reasons == ["a member's own booking of up to 2 seats needs no approval"]
}

test_member_books_up_to_the_limit_without_approval if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("mia", 2), mia)
	d.allow == true
}

test_member_booking_above_the_limit_needs_approval if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("mia", 3), mia)
	d.allow == false
	d.approval_required == true
	d.reasons == ["reserving 3 seats (more than 2) needs approval by an owner of tenant acme"]
}

test_seat_limit_comes_from_data if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("mia", 3), mia)
		with data.callgate.config.workshop.seats_without_approval as 5
	d.allow == true
}

test_reservations_carry_no_quota_unless_configured if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("mia", 1), mia)
	not d.quotas
}

test_reservations_per_day_charge_the_participant if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("mia", 1), mia)
		with data.callgate.config.workshop.reservations_per_day as 2
	d.allow == true
	d.quotas == [{"key": "acme/seat_reservations/mia", "limit": 2, "window_s": 86400, "cost": 1}]
}

test_a_reservation_waiting_for_approval_is_charged_too if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("bob", 1), olga)
		with data.callgate.config.workshop.reservations_per_day as 2
	d.approval_required == true
	d.quotas[0].key == "acme/seat_reservations/bob"
}

test_call_quotas_charge_each_caller_per_tool if {
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-acme-1"}, mia)
		with data.callgate.config.call_quotas as {"check_availability": {"limit": 20, "window_s": 60}}
	d.quotas == [{"key": "acme/calls/check_availability/mia", "limit": 20, "window_s": 60, "cost": 1}]
}

test_the_shipped_bundle_caps_availability_checks_per_caller if {
	d := callgate.decision with input as call("check_availability", "read", {"event_id": "ws-acme-1"}, mia)
	d.allow == true
	d.quotas == [{"key": "acme/calls/check_availability/mia", "limit": 120, "window_s": 60, "cost": 1}]
}

test_other_tools_are_not_charged if {
	d := callgate.decision with input as call("get_weather", "read", {"city": "Berlin"}, alice)
		with data.callgate.config.workshop.reservations_per_day as 2
	d.allow == true
	not d.quotas
}

test_member_may_not_book_for_someone_else if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("bob", 1), mia)
	d.allow == false
	not d.approval_required
	d.reasons == ["a member reserves only for themself, not for bob"]
}

test_organizer_books_for_someone_else_with_approval if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("bob", 1), olga)
	d.approval_required == true
}

test_member_may_not_book_an_event_of_another_tenant if {
	args := {"event_id": "ws-globex-1", "participant": "mia", "seats": 1}
	d := callgate.decision with input as call("reserve_seat", "write", args, mia)
	d.allow == false
	d.reasons == ["event ws-globex-1 is outside tenant acme"]
}

test_member_lists_own_tenant_events if {
	d := callgate.decision with input as call("list_events", "read", {"tenant": "acme"}, mia)
	d.allow == true
}

test_member_may_not_list_other_tenant_events if {
	d := callgate.decision with input as call("list_events", "read", {"tenant": "globex"}, mia)
	d.allow == false
	d.reasons == ["events of tenant globex are outside tenant acme"]
}

test_traveler_may_not_book_a_seat if {
	d := callgate.decision with input as call("reserve_seat", "write", seat_args("alice", 1), alice)
	d.allow == false
}

# ---------------------------------------------------------------------------------------------
# may_approve

approve_input(approver, requester) := {
	"action": "approve",
	"approver": approver,
	"requester": requester,
	"call": {"id": "call-1", "tool": "reserve_seat"},
	"tool": {"name": "reserve_seat", "version": "1.0.0", "effect": "write", "labels": {}},
}

test_owner_of_same_tenant_may_approve if {
	callgate.may_approve with input as approve_input(owen, olga)
}

test_owner_may_not_approve_own_request if {
	not callgate.may_approve with input as approve_input(owen, owen)
}

test_owner_of_other_tenant_may_not_approve if {
	not callgate.may_approve with input as approve_input(globex_owner, olga)
}

test_non_owner_may_not_approve if {
	not callgate.may_approve with input as approve_input(oscar, olga)
}

test_may_approve_is_false_not_undefined if {
	callgate.may_approve == false with input as {}
}

# ---------------------------------------------------------------------------------------------
# may_resolve

resolve_input(operator, requester) := {
	"action": "resolve",
	"operator": operator,
	"requester": requester,
	"call": {"id": "call-1"},
}

test_operator_of_same_tenant_may_resolve if {
	callgate.may_resolve with input as resolve_input(oscar, olga)
}

test_operator_of_other_tenant_may_not_resolve if {
	not callgate.may_resolve with input as resolve_input(person("op", "globex", ["operator"]), olga)
}

test_non_operator_may_not_resolve if {
	not callgate.may_resolve with input as resolve_input(owen, olga)
}

test_operator_may_not_resolve_own_run if {
	opal := person("opal", "acme", ["member", "operator"])
	not callgate.may_resolve with input as resolve_input(opal, opal)
}

test_may_resolve_is_false_not_undefined if {
	callgate.may_resolve == false with input as {}
}

# ---------------------------------------------------------------------------------------------
# may_read_audit

audit_input(who, tenant, subject) := {"action": "audit", "identity": who, "tenant": tenant, "subject": subject}

test_auditor_reads_own_tenant if {
	callgate.may_read_audit with input as audit_input(audrey, "acme", "")
}

test_auditor_may_not_read_other_tenant if {
	not callgate.may_read_audit with input as audit_input(audrey, "globex", "")
}

test_non_auditor_may_not_read_tenant if {
	not callgate.may_read_audit with input as audit_input(olga, "acme", "")
}

test_auditor_reads_callgates_own_records if {
	callgate.may_read_audit with input as audit_input(audrey, "", "")
}

test_non_auditor_may_not_read_callgates_own_records if {
	not callgate.may_read_audit with input as audit_input(olga, "", "")
}

test_subject_reads_own_runs if {
	callgate.may_read_audit with input as audit_input(olga, "acme", "olga")
}

test_subject_may_not_read_other_subject if {
	not callgate.may_read_audit with input as audit_input(olga, "acme", "alice")
}

# ---------------------------------------------------------------------------------------------
# may_list_runs

runs_input(who, tenant, subject) := {"action": "list_runs", "identity": who, "tenant": tenant, "subject": subject}

test_operator_and_auditor_list_their_tenants_runs if {
	callgate.may_list_runs with input as runs_input(oscar, "acme", "")
	callgate.may_list_runs with input as runs_input(audrey, "acme", "alice")
}

test_no_one_lists_another_tenants_runs if {
	not callgate.may_list_runs with input as runs_input(oscar, "globex", "")
}

test_others_may_not_list_someone_elses_runs if {
	not callgate.may_list_runs with input as runs_input(olga, "acme", "alice")
	callgate.may_list_runs == false with input as {}
}

# ---------------------------------------------------------------------------------------------
# may_read_quotas, may_reset_quotas

test_operator_and_auditor_read_their_tenants_quota_keys if {
	callgate.may_read_quotas with input as {"action": "read_quotas", "identity": oscar, "prefix": "acme/"}
	callgate.may_read_quotas with input as {"action": "read_quotas", "identity": audrey, "prefix": "acme/seat_reservations/"}
}

test_no_one_reads_every_key_or_another_tenants if {
	not callgate.may_read_quotas with input as {"action": "read_quotas", "identity": oscar, "prefix": ""}
	not callgate.may_read_quotas with input as {"action": "read_quotas", "identity": oscar, "prefix": "acmecorp/"}
	not callgate.may_read_quotas with input as {"action": "read_quotas", "identity": mia, "prefix": "acme/"}
	callgate.may_read_quotas == false with input as {}
}

test_only_an_operator_resets_a_key_of_their_tenant if {
	callgate.may_reset_quotas with input as {"action": "reset_quota", "identity": oscar, "key": "acme/seat_reservations/mia"}
	not callgate.may_reset_quotas with input as {"action": "reset_quota", "identity": audrey, "key": "acme/seat_reservations/mia"}
	not callgate.may_reset_quotas with input as {"action": "reset_quota", "identity": oscar, "key": "globex/x"}
	callgate.may_reset_quotas == false with input as {}
}

# ---------------------------------------------------------------------------------------------
# may_pin_tools

tara := person("tara", "acme", ["tools_admin"])

test_operators_auditors_and_tools_admins_list_pins if {
	callgate.may_pin_tools with input as {"action": "read_pins", "identity": oscar, "tools": []}
	callgate.may_pin_tools with input as {"action": "read_pins", "identity": audrey, "tools": ["book"]}
	callgate.may_pin_tools with input as {"action": "read_pins", "identity": tara, "tools": []}
	not callgate.may_pin_tools with input as {"action": "read_pins", "identity": mia, "tools": []}
}

test_only_a_tools_admin_approves_a_changed_definition if {
	pin := {"action": "pin_tool", "tool": "book", "fingerprint": "sha256:b", "previous": "sha256:a", "fields": ["description"]}
	callgate.may_pin_tools with input as object.union(pin, {"identity": tara})
	not callgate.may_pin_tools with input as object.union(pin, {"identity": oscar})
	not callgate.may_pin_tools with input as object.union(pin, {"identity": audrey})
	callgate.may_pin_tools == false with input as {}
	callgate.may_pin_tools == false with input as {"action": "pin_tool", "identity": {"subject": "x", "roles": "tools_admin"}, "fingerprint": "sha256:b"}
}

# ---------------------------------------------------------------------------------------------
# offer

test_offer_traveler_tools if {
	callgate.offer == {"get_train_status", "get_weather"} with input as {"action": "offer", "identity": alice}
}

test_offer_is_the_union_of_roles if {
	both := person("bea", "acme", ["traveler", "organizer"])
	callgate.offer == {
		"get_train_status", "get_weather", "check_availability", "reserve_seat",
		"cancel_seat",
	} with input as {"action": "offer", "identity": both}
}

test_offer_nothing_to_owner if {
	callgate.offer == set() with input as {"action": "offer", "identity": owen}
}

test_offer_undefined_for_wildcard if {
	not callgate.offer with input as {"action": "offer", "identity": tess}
}
