"""The crash tier: real workloads on a named workspace's mount, its daemon SIGKILLed at
random points, the workspace resumed through the command line and checked."""
