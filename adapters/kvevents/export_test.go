package kvevents

// FromProto exposes fromProto to the external tests.
var FromProto = fromProto
