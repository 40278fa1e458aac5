package gateway

import (
	"context"
	"strings"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
)

// instanceServer serves the part of
// google.bigtable.admin.v2.BigtableInstanceAdmin that tools call to find
// their way (cbt listinstances, listclusters): every instance name maps to
// the one cluster behind the gateway, which has one Bigtable "cluster"
// whose nodes are the live tablet servers. Creating, changing and deleting
// instances, clusters and app profiles answer UNIMPLEMENTED.
type instanceServer struct {
	btapb.UnimplementedBigtableInstanceAdminServer
	s *Server
}

func (i *instanceServer) instance(n instanceName) *btapb.Instance {
	return &btapb.Instance{
		Name:        n.String(),
		DisplayName: n.instance,
		State:       btapb.Instance_READY,
		Type:        btapb.Instance_PRODUCTION,
	}
}

// GetInstance describes any instance name as the gateway's cluster.
func (i *instanceServer) GetInstance(ctx context.Context, req *btapb.GetInstanceRequest) (*btapb.Instance, error) {
	n, err := parseInstance("name", req.GetName())
	if err != nil {
		return nil, err
	}
	return i.instance(n), nil
}

// ListInstances lists one instance, named by Options.InstanceID.
func (i *instanceServer) ListInstances(ctx context.Context, req *btapb.ListInstancesRequest) (*btapb.ListInstancesResponse, error) {
	project, ok := strings.CutPrefix(req.GetParent(), "projects/")
	if !ok || !segment(project) {
		return nil, invalidf("parent %q is not a valid project name: expected projects/<project>", req.GetParent())
	}
	n := instanceName{project: project, instance: i.s.opts.InstanceID}
	return &btapb.ListInstancesResponse{Instances: []*btapb.Instance{i.instance(n)}}, nil
}

func (i *instanceServer) cluster(ctx context.Context, in instanceName) (*btapb.Cluster, error) {
	servers, err := i.s.c.Admin().Servers(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &btapb.Cluster{
		Name:               in.String() + "/clusters/" + i.s.opts.ClusterID,
		Location:           "projects/" + in.project + "/locations/" + i.s.opts.Zone,
		State:              btapb.Cluster_READY,
		ServeNodes:         int32(len(servers)),
		DefaultStorageType: btapb.StorageType_SSD,
	}, nil
}

// ListClusters lists the one cluster of an instance ("-": of all).
func (i *instanceServer) ListClusters(ctx context.Context, req *btapb.ListClustersRequest) (*btapb.ListClustersResponse, error) {
	parent := req.GetParent()
	if p, ok := strings.CutSuffix(parent, "/instances/-"); ok {
		parent = p + "/instances/" + i.s.opts.InstanceID
	}
	in, err := parseInstance("parent", parent)
	if err != nil {
		return nil, err
	}
	c, err := i.cluster(ctx, in)
	if err != nil {
		return nil, err
	}
	return &btapb.ListClustersResponse{Clusters: []*btapb.Cluster{c}}, nil
}

// GetCluster describes the cluster; its id must be Options.ClusterID.
func (i *instanceServer) GetCluster(ctx context.Context, req *btapb.GetClusterRequest) (*btapb.Cluster, error) {
	name := req.GetName()
	k := strings.LastIndex(name, "/clusters/")
	if k < 0 {
		return nil, invalidf("name %q is not a valid cluster name: expected projects/<project>/instances/<instance>/clusters/<cluster>", name)
	}
	in, err := parseInstance("name", name[:k])
	if err != nil {
		return nil, err
	}
	if id := name[k+len("/clusters/"):]; id != i.s.opts.ClusterID {
		return nil, notFoundf("cluster %q not found: the gateway's one cluster is %q", name, i.s.opts.ClusterID)
	}
	return i.cluster(ctx, in)
}
