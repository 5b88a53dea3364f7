// Package nri holds the NRI suite: how the runtime handles NRI plugins that
// fail, stall or crash in each hook.
package nri
