package tabletserver

// EtcdEndpointsForTest lets the external example test reach the package's
// embedded etcd.
func EtcdEndpointsForTest() []string { return testEtcd.Endpoints() }
