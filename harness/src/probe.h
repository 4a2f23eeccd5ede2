#pragma once
#include "claimcheck/probe.h"
