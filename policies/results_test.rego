# Unit tests of the default `result` rule (policies/results.rego).
package callgate_results_test

import data.callgate

result_input(effect, output) := {
	"action": "result",
	"call": {"id": "c1", "tool": "lookup", "effect": effect},
	"tool": {"name": "lookup", "version": "1", "effect": effect, "labels": {}},
	"identity": {"subject": "alice", "tenant": "acme", "roles": ["traveler"], "claims": {}},
	"run": {"id": "r1", "provider": "openai.responses", "labels": {}, "tool_calls_used": 1},
	"result": {"status": "SUCCEEDED", "output": output, "schema_problems": []},
}

test_read_with_secrets_is_redacted if {
	out := {"owner": "bob@example.com", "train": "ICE123", "card": "4111 1111 1111 1111"}
	given := result_input("read", out)
	r := callgate.result with input as given
	r.deliver == true
	r.redact == {"/owner", "/card"}
	r.reasons == ["redacted 2 value(s) that look like: card_number, email"]
}

test_clean_read_is_delivered_as_is if {
	given := result_input("read", {"train": "ICE123", "delay_min": 4})
	not callgate.result with input as given
}

test_a_read_with_another_scripts_digits_is_delivered_as_is if {
	given := result_input("read", {"phone": "٠٥٥٥ ١٢٣ ٤٥٦٧ ٨٩٠١", "total": "٤١١١ ١١١١ ١١١١ ١١١١"})
	not callgate.result with input as given
}

test_writes_are_delivered_as_is if {
	given := result_input("write", {"confirmation": "bob@example.com"})
	not callgate.result with input as given
}

test_a_result_without_output_is_delivered_as_is if {
	given := result_input("read", null)
	not callgate.result with input as given
}

test_a_detected_whole_output_is_redacted_at_the_root if {
	given := result_input("read", "call me: bob@example.com")
	r := callgate.result with input as given
	r.redact == {""}
}
