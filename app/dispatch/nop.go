package dispatch

import "time"

// nopMetrics records nothing (Deps.Metrics nil).
type nopMetrics struct{}

func (nopMetrics) ObserveTTFT(string, string, time.Duration)            {}
func (nopMetrics) ObservePrefillDuration(string, string, time.Duration) {}
func (nopMetrics) IncConnectorMode(string)                              {}
func (nopMetrics) IncKVTransferFailure()                                {}
func (nopMetrics) IncBootstrapFailure()                                 {}
func (nopMetrics) IncAdmissionWait()                                    {}
func (nopMetrics) IncAdmissionShed()                                    {}
func (nopMetrics) IncSelection(string, string, string, string)          {}
func (nopMetrics) AddActive(string, float64)                            {}
