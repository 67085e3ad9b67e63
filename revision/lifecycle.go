package revision

// Lifecycle is the state of a package revision, with Porch's values.
type Lifecycle string

// The lifecycle states. A revision is created as a Draft, proposed for
// review, then published (approved), which gives it a revision number and
// makes it immutable. A published revision is deleted by first proposing its
// deletion.
const (
	LifecycleDraft            Lifecycle = "Draft"
	LifecycleProposed         Lifecycle = "Proposed"
	LifecyclePublished        Lifecycle = "Published"
	LifecycleDeletionProposed Lifecycle = "DeletionProposed"
)

// Lifecycles lists every lifecycle state in order.
func Lifecycles() []Lifecycle {
	return []Lifecycle{LifecycleDraft, LifecycleProposed, LifecyclePublished, LifecycleDeletionProposed}
}

// Valid reports whether l is one of the four lifecycle states.
func (l Lifecycle) Valid() bool {
	switch l {
	case LifecycleDraft, LifecycleProposed, LifecyclePublished, LifecycleDeletionProposed:
		return true
	}
	return false
}

// IsPublished reports whether l is Published or DeletionProposed: a state
// whose content is immutable and which holds a revision number.
func (l Lifecycle) IsPublished() bool {
	return l == LifecyclePublished || l == LifecycleDeletionProposed
}

// Transition is one allowed change of lifecycle.
type Transition struct {
	From, To Lifecycle
	// Verb is the name Porch and porchctl give the change.
	Verb string
}

var transitions = []Transition{
	{LifecycleDraft, LifecycleProposed, "propose"},
	{LifecycleProposed, LifecycleDraft, "reject"},
	{LifecycleProposed, LifecyclePublished, "approve"},
	{LifecyclePublished, LifecycleDeletionProposed, "propose-delete"},
	{LifecycleDeletionProposed, LifecyclePublished, "reject"},
}

// Transitions returns the allowed lifecycle changes. The slice is a copy.
func Transitions() []Transition {
	return append([]Transition(nil), transitions...)
}

// CheckTransition returns nil when from→to is one of [Transitions], and a
// *TransitionError matching [ErrInvalidTransition] otherwise. Staying in the
// same state is not a transition.
func CheckTransition(from, to Lifecycle) error {
	for _, t := range transitions {
		if t.From == from && t.To == to {
			return nil
		}
	}
	return &TransitionError{From: from, To: to}
}
