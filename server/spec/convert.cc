#include "sparrow/v1/spec.pb.h"
