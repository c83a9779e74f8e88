# The default `result` rule: what may reach the model of a tool's result.
#
# callgate asks `result` after a call ran and before its result is stored and handed on, with
# input {"action": "result", "call", "tool", "identity", "run",
#        "result": {"status", "output", "schema_problems"}}
# and expects {"deliver": bool, "redact": [JSON pointers], "reasons": [strings]}. Undefined
# delivers the result as is; a malformed answer or a failed evaluation withholds it.
#
# Here: a read's output has every string a detector of callgate.detect matches replaced by
# "[redacted]"; writes, and reads without a hit, are delivered as they are. (It does not test
# input.action: callgate asks `result` only about results, and a rule that read input.action
# would make every `decision` input carry it.) A read with more
# hits than callgate takes pointers for (256) is withheld instead (fail closed).
package callgate

import data.callgate.detect

result := answer if {
	input.tool.effect == "read"
	detect.may_hit(input.result.output)
	hits := detect.hits(input.result.output)
	count(hits) > 0
	found := {kind | some _, kinds in hits; some kind in kinds}
	answer := {
		"deliver": true,
		"redact": {p | some p, _ in hits},
		"reasons": [sprintf("redacted %d value(s) that look like: %s", [count(hits), concat(", ", sort(found))])],
	}
}
