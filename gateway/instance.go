package gateway

import (
	"context"
	"strconv"
	"strings"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// instanceServer serves the part of
// google.bigtable.admin.v2.BigtableInstanceAdmin that tools call to find
// their way (cbt listinstances, listclusters) and to make and drop
// instances: an instance is a namespace (namespaces.go, docs/GATEWAY.md
// "Names and instances"), with one Bigtable "cluster" whose nodes are the
// live tablet servers. Changing instances, and clusters and app profiles,
// answer UNIMPLEMENTED.
type instanceServer struct {
	btapb.UnimplementedBigtableInstanceAdminServer
	s *Server
}

func (i *instanceServer) instance(n instanceName, display string) *btapb.Instance {
	if display == "" {
		display = n.instance
	}
	return &btapb.Instance{
		Name:        n.String(),
		DisplayName: display,
		State:       btapb.Instance_READY,
		Type:        btapb.Instance_PRODUCTION,
	}
}

// GetInstance describes an instance: its namespace, or the default
// namespace for an instance id that is not one (as every id was before
// namespaces), NOT_FOUND in strict mode (Options.Instances).
func (i *instanceServer) GetInstance(ctx context.Context, req *btapb.GetInstanceRequest) (*btapb.Instance, error) {
	n, err := parseInstance("name", req.GetName())
	if err != nil {
		return nil, err
	}
	if i.s.ns.strict {
		if _, err := i.s.ns.of(ctx, n); err != nil {
			return nil, err
		}
	}
	return i.instance(n, ""), nil
}

// ListInstances lists Options.InstanceID (the default namespace) and one
// instance per namespace.
func (i *instanceServer) ListInstances(ctx context.Context, req *btapb.ListInstancesRequest) (*btapb.ListInstancesResponse, error) {
	project, ok := strings.CutPrefix(req.GetParent(), "projects/")
	if !ok || !segment(project) {
		return nil, invalidf("parent %q is not a valid project name: expected projects/<project>", req.GetParent())
	}
	nss, err := i.s.c.Admin().ListNamespaces(ctx)
	if status.Code(err) == codes.Unimplemented {
		nss, err = nil, nil // a cluster from before namespaces
	}
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &btapb.ListInstancesResponse{Instances: []*btapb.Instance{i.instance(instanceName{project: project, instance: i.s.opts.InstanceID}, "")}}
	for _, ns := range nss {
		if ns.Name != cell.DefaultNamespace && ns.Name != i.s.opts.InstanceID {
			resp.Instances = append(resp.Instances, i.instance(instanceName{project: project, instance: ns.Name}, ns.Description))
		}
	}
	return resp, nil
}

// CreateInstance creates the namespace of the instance id (ALREADY_EXISTS
// if it exists; the clusters asked for are not made: the gateway's one
// cluster serves every instance). The id must be a namespace name.
func (i *instanceServer) CreateInstance(ctx context.Context, req *btapb.CreateInstanceRequest) (*longrunningpb.Operation, error) {
	project, ok := strings.CutPrefix(req.GetParent(), "projects/")
	if !ok || !segment(project) {
		return nil, invalidf("parent %q is not a valid project name: expected projects/<project>", req.GetParent())
	}
	id := req.GetInstanceId()
	if err := cell.ValidateNamespaceName(id); err != nil {
		return nil, invalidf("instance_id %q: an instance is a Tabula namespace: %s", id, trimInvalid(err))
	}
	if id == cell.DefaultNamespace || id == i.s.opts.InstanceID {
		return nil, status.Errorf(codes.AlreadyExists, "instance %q already exists: it is the default namespace", id)
	}
	start := timestamppb.Now()
	err := i.s.c.Admin().CreateNamespace(ctx, client.NamespaceInfo{Name: id, Description: req.GetInstance().GetDisplayName()})
	if err != nil {
		return nil, toStatus(err)
	}
	i.s.ns.set(id, true)
	n := instanceName{project: project, instance: id}
	return i.s.done(n.String()+"/operations/create-"+strconv.FormatInt(start.AsTime().UnixMicro(), 10),
		&btapb.CreateInstanceMetadata{OriginalRequest: req, RequestTime: start, FinishTime: timestamppb.Now()},
		i.instance(n, req.GetInstance().GetDisplayName()))
}

// DeleteInstance deletes the instance's namespace if it holds no table
// (FAILED_PRECONDITION otherwise: unlike Cloud Bigtable, the gateway does
// not delete tables with their instance; `tabula namespace delete
// --recursive` does). The default namespace cannot be deleted.
func (i *instanceServer) DeleteInstance(ctx context.Context, req *btapb.DeleteInstanceRequest) (*emptypb.Empty, error) {
	n, err := parseInstance("name", req.GetName())
	if err != nil {
		return nil, err
	}
	ns := n.instance
	if ns == cell.DefaultNamespace || ns == i.s.opts.InstanceID || cell.ValidateNamespaceName(ns) != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "instance %q is the default namespace, which cannot be deleted", n.instance)
	}
	if _, err := i.s.c.Admin().DeleteNamespace(ctx, ns, false); err != nil {
		return nil, toStatus(err)
	}
	i.s.ns.set(ns, false)
	return &emptypb.Empty{}, nil
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
