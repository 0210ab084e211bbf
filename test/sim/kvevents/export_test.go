package kvevents

import "github.com/go-zeromq/zmq4"

// PubTopics lists the topics the PUB socket's peers subscribed to (tests wait for a
// subscription before publishing: a PUB drops what no subscriber asked for yet).
func (p *Publisher) PubTopics() []string { return p.pub.(zmq4.Topics).Topics() }
